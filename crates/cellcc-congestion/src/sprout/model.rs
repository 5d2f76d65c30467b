//! Sprout's stochastic link model (NSDI 2013 §3.1–§3.3): a probability distribution of
//! the link rate λ on a grid, its Brownian evolution with a sticky outage state, the
//! Bayesian update from a tick's arrival count, and the tables that turn the current
//! distribution into a forecast of cumulative deliveries.
//!
//! Everything is deterministic: the Gaussian kernel and the Poisson probabilities are
//! computed once from the configuration; no random numbers are drawn.

use std::sync::{Arc, Mutex, OnceLock};

use super::config::SproutConfig;

/// The Brownian kernel is cut at ±5 σ (reference `Process::evolve`, `for_range`).
const KERNEL_SIGMAS: f64 = 5.0;
/// Probabilities below this are dropped from the sparse tables and skipped in sums: far
/// below anything that can move a 5th percentile.
const NEGLIGIBLE: f64 = 1e-16;

/// Complementary error function, fractional error below 1.2e-7 everywhere (the
/// Chebyshev-fitted form of Press et al., Numerical Recipes §6.2); relative accuracy in
/// the tails is what the Gaussian kernel needs.
pub(crate) fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Standard normal CDF Φ.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The pieces of the model that depend only on the configuration.
#[derive(Debug)]
pub(crate) struct Grid {
    /// Rate of grid point i, packets/s: i · Δ, Δ = max_rate / (bins − 1). Point 0 is the
    /// outage state.
    pub rates: Vec<f64>,
    /// Brownian kernel: `kernel[K + d]` is the probability that the rate moves by d grid
    /// points in one tick, |d| ≤ K.
    pub kernel: Vec<f64>,
    /// Probability of leaving the outage state in one tick, 1 − e^(−λ_z τ).
    pub escape: f64,
    /// Tick length, s.
    pub tau: f64,
    /// `ln_fact[k]` = ln k!, for the Poisson tables.
    ln_fact: Vec<f64>,
    /// `ln(λ_i τ)` of every grid point (−∞ at the outage point), for the likelihood of
    /// every tick: a function of the grid only, so computed once.
    ln_mu: Vec<f64>,
}

impl Grid {
    pub(super) fn new(cfg: &SproutConfig) -> Self {
        let n = cfg.bins as usize;
        let delta = cfg.max_rate_pps / (n - 1) as f64;
        let rates: Vec<f64> = (0..n).map(|i| i as f64 * delta).collect();
        let tau = cfg.tick_ms / 1000.0;
        // §3.1: λ moves by Brownian motion with σ = 200 packets/s/√s; over a tick the
        // step is N(0, σ²τ). The mass reaching point j is the normal mass of its cell
        // [λ_j − Δ/2, λ_j + Δ/2] (reference: `cdf(ceil) − cdf(floor)`).
        let sd = cfg.sigma_pps * tau.sqrt();
        let k = ((KERNEL_SIGMAS * sd / delta).ceil() as usize).min(n - 1);
        let kernel = (0..=2 * k)
            .map(|i| {
                let d = i as f64 - k as f64;
                normal_cdf((d + 0.5) * delta / sd) - normal_cdf((d - 0.5) * delta / sd)
            })
            .collect();
        // §3.1: the outage state is left at rate λ_z (a Poisson event within the tick).
        let escape = 1.0 - (-cfg.outage_escape_per_s * tau).exp();
        let limit = cfg.tick_count_limit() as usize;
        let mut ln_fact = Vec::with_capacity(limit + 1);
        let mut acc = 0.0;
        ln_fact.push(0.0);
        for i in 1..=limit {
            acc += (i as f64).ln();
            ln_fact.push(acc);
        }
        let ln_mu = rates.iter().map(|&r: &f64| (r * tau).ln()).collect();
        Grid {
            rates,
            kernel,
            escape,
            tau,
            ln_fact,
            ln_mu,
        }
    }

    /// Half-width K of the kernel, grid points.
    pub(super) fn reach(&self) -> usize {
        self.kernel.len() / 2
    }

    /// One tick of evolution of `p` (§3.1; reference `Process::evolve`): every point
    /// spreads by the kernel. Mass at the outage point stays there with probability
    /// 1 − escape (the paper's sticky outage, an exponential holding time of mean 1/λ_z)
    /// and otherwise spreads from 0 like any other; the reference instead multiplies
    /// the staying mass by the kernel's centre cell, which lets most of it leak out in a
    /// tick. Mass pushed off the grid is lost (the caller normalises).
    pub(super) fn evolve(&self, p: &[f64], out: &mut Vec<f64>) {
        let n = p.len();
        let k = self.reach();
        out.clear();
        out.resize(n, 0.0);
        for (i, &pi) in p.iter().enumerate() {
            if pi < NEGLIGIBLE {
                continue;
            }
            let lo = i.saturating_sub(k);
            let hi = (i + k).min(n - 1);
            // §3.1: the outage holds with probability 1 − escape; what escapes diffuses.
            let moving = if i == 0 { pi * self.escape } else { pi };
            if i == 0 {
                out[0] += pi - moving;
            }
            // out[j] += moving · kernel[K + j − i] for j in lo..=hi, as slices (the same
            // additions in the same order, without an index check per term).
            let kernel = &self.kernel[k + lo - i..=k + hi - i];
            for (o, &w) in out[lo..=hi].iter_mut().zip(kernel) {
                *o += moving * w;
            }
        }
    }

    /// Poisson probability of `count` arrivals in a tick at grid point `i`.
    pub(super) fn poisson(&self, i: usize, count: usize) -> f64 {
        let mu = self.rates[i] * self.tau;
        if mu == 0.0 {
            return if count == 0 { 1.0 } else { 0.0 };
        }
        (-mu + count as f64 * mu.ln() - self.ln_fact[count]).exp()
    }
}

/// Normalise `p` to sum 1; a distribution with no mass left (an impossible observation
/// on a truncated grid) restarts uniform, where the reference would divide by zero.
pub(crate) fn normalize(p: &mut [f64]) {
    let sum: f64 = p.iter().sum();
    if sum > 0.0 && sum.is_finite() {
        for v in p.iter_mut() {
            *v /= sum;
        }
    } else {
        let u = 1.0 / p.len() as f64;
        p.iter_mut().for_each(|v| *v = u);
    }
}

/// Bayesian update with `count` arrivals observed in a tick (§3.2): multiply by the
/// Poisson likelihood P(count | λ_i τ) and normalise. Done in logarithms (the common
/// ln count! cancels) so that a count far in the tail of every point does not underflow.
pub(crate) fn observe(grid: &Grid, p: &mut [f64], count: u32) {
    let n = count as f64;
    let mut best = f64::NEG_INFINITY;
    let mut logw = vec![f64::NEG_INFINITY; p.len()];
    for (i, (&pi, lw)) in p.iter().zip(logw.iter_mut()).enumerate() {
        if pi <= 0.0 {
            continue;
        }
        let mu = grid.rates[i] * grid.tau;
        let ll = if mu == 0.0 {
            if count == 0 {
                0.0
            } else {
                f64::NEG_INFINITY
            }
        } else {
            n * grid.ln_mu[i] - mu // ln P(n | μ) + ln n!
        };
        *lw = pi.ln() + ll;
        best = best.max(*lw);
    }
    for (v, lw) in p.iter_mut().zip(logw) {
        *v = if best.is_finite() {
            (lw - best).exp()
        } else {
            0.0
        };
    }
    normalize(p);
}

/// A distribution over counts `lo..lo + cdf.len()` kept as its CDF; below `lo` the CDF
/// is 0 and above it stays at the last value (mass above the per-tick limit is dropped,
/// as in the reference, so the last value can be below 1).
#[derive(Clone, Debug)]
pub(crate) struct SparseCdf {
    lo: u32,
    cdf: Vec<f64>,
}

impl SparseCdf {
    fn from_pmf(lo: usize, pmf: &[f64]) -> Self {
        let mut acc = 0.0;
        let cdf = pmf
            .iter()
            .map(|v| {
                acc += v;
                acc
            })
            .collect();
        SparseCdf { lo: lo as u32, cdf }
    }

    pub(super) fn at(&self, count: u32) -> f64 {
        if count < self.lo {
            return 0.0;
        }
        let i = (count - self.lo) as usize;
        *self.cdf.get(i).or(self.cdf.last()).unwrap_or(&0.0)
    }
}

/// For every grid point taken as certain, the distribution of cumulative arrivals over
/// the next 1..=H ticks (reference `ProcessForecastInterval`, one per horizon).
#[derive(Debug)]
pub(crate) struct ForecastTables {
    /// `cdf[h − 1][i]`: horizon h ticks, starting certain at grid point i.
    cdf: Vec<Vec<SparseCdf>>,
    /// Largest cumulative count any horizon resolves.
    max_count: u32,
}

/// Trim a vector to the range where values are not negligible; returns the offset.
fn trim(v: &[f64]) -> (usize, &[f64]) {
    let lo = v.iter().position(|&x| x >= NEGLIGIBLE).unwrap_or(0);
    let hi = v
        .iter()
        .rposition(|&x| x >= NEGLIGIBLE)
        .map_or(lo, |i| i + 1);
    (lo, &v[lo..hi])
}

impl ForecastTables {
    /// Build the tables (§3.3): for each starting point, for each tick, the tick's count
    /// distribution is the Poisson mixture over the component's current rate
    /// distribution (counts `0..limit`), convolved into the running total; then the
    /// component evolves one tick.
    pub(super) fn new(cfg: &SproutConfig, grid: &Grid) -> Self {
        let n = grid.rates.len();
        let h_max = cfg.forecast_ticks as usize;
        let limit = cfg.tick_count_limit() as usize;
        // Poisson table per grid point, counts 0..limit.
        let pois: Vec<Vec<f64>> = (0..n)
            .map(|i| (0..limit).map(|c| grid.poisson(i, c)).collect())
            .collect();
        let mut cdf = vec![Vec::with_capacity(n); h_max];
        let mut q = vec![0.0; n];
        let mut next = Vec::with_capacity(n);
        let mut tick = vec![0.0; limit];
        for start in 0..n {
            q.iter_mut().for_each(|v| *v = 0.0);
            q[start] = 1.0;
            // Running total, offset `off`.
            let mut total: Vec<f64> = vec![1.0];
            let mut off = 0usize;
            for per_h in cdf.iter_mut() {
                tick.iter_mut().for_each(|v| *v = 0.0);
                for (j, &qj) in q.iter().enumerate() {
                    if qj < NEGLIGIBLE {
                        continue;
                    }
                    for (t, &pc) in tick.iter_mut().zip(&pois[j]) {
                        *t += qj * pc;
                    }
                }
                let (tlo, tv) = trim(&tick);
                let mut conv = vec![0.0; total.len() + tv.len().max(1) - 1];
                for (a, &x) in total.iter().enumerate() {
                    if x < NEGLIGIBLE {
                        continue;
                    }
                    for (b, &y) in tv.iter().enumerate() {
                        conv[a + b] += x * y;
                    }
                }
                let (clo, cv) = trim(&conv);
                off += tlo + clo;
                total = cv.to_vec();
                per_h.push(SparseCdf::from_pmf(off, &total));
                grid.evolve(&q, &mut next);
                std::mem::swap(&mut q, &mut next);
                // The reference normalises each component before every tick's counts.
                normalize(&mut q);
            }
        }
        ForecastTables {
            cdf,
            max_count: (h_max * (limit - 1)) as u32,
        }
    }

    /// The grid points of `p` that carry mass, with their probabilities, in grid order:
    /// the terms of every [`ForecastTables::lower_quantile`] of one forecast.
    pub(super) fn support(p: &[f64], out: &mut Vec<(usize, f64)>) {
        out.clear();
        out.extend(
            p.iter()
                .copied()
                .enumerate()
                .filter(|&(_, v)| v >= NEGLIGIBLE),
        );
    }

    /// The lower `quantile` of cumulative arrivals over `h` ticks for the distribution
    /// whose [`ForecastTables::support`] is `support` (reference `lower_quantile`: the
    /// smallest count whose CDF reaches it; the largest resolvable count if the truncated
    /// CDF never does), or `floor` if that is smaller.
    ///
    /// The mixture CDF `Σ_i p_i·F_i(c)` is non-decreasing in c even in floating point
    /// (each `F_i` is a running sum of non-negative terms, and rounded products and sums
    /// are monotone in each operand), so a binary search over `[floor, max]` finds
    /// `max(floor, answer)` exactly. The forecast asks horizon h + 1 with the floor set to
    /// horizon h's answer, which it would take as the minimum anyway (§3.3: cumulative
    /// deliveries do not decrease with the horizon), and so evaluates fewer CDFs;
    /// `hint` (the previous tick's answer for this horizon) is tested first.
    pub(super) fn lower_quantile(
        &self,
        support: &[(usize, f64)],
        h: usize,
        quantile: f64,
        floor: u32,
        hint: Option<u32>,
    ) -> u32 {
        let table = &self.cdf[h - 1];
        let cdf_at = |c: u32| -> f64 { support.iter().map(|&(i, v)| v * table[i].at(c)).sum() };
        let (mut lo, mut hi) = (floor.min(self.max_count), self.max_count);
        // `hint`, last tick's answer, is usually the answer again or close: the answer is
        // the smallest c in [lo, hi] whose CDF reaches the quantile (a monotone test), so
        // testing the hint and the count below it either settles it or halves the range
        // to search, with the same result as a search of the whole range.
        let mut known_reached = false;
        if let Some(c) = hint.map(|c| c.clamp(lo, hi)) {
            if cdf_at(c) >= quantile {
                if c == lo || cdf_at(c - 1) < quantile {
                    return c;
                }
                hi = c - 1;
                known_reached = true;
            } else if c == hi {
                return hi;
            } else {
                lo = c + 1;
            }
        }
        if !known_reached && cdf_at(hi) < quantile {
            return hi;
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if cdf_at(mid) >= quantile {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// Grid and tables for one configuration, shared by every flow that uses it: building
/// the tables costs far more than a flow's whole run on short scenarios. A pure function
/// of the configuration, memoised; results do not depend on which flow built it.
pub(crate) fn shared_model(cfg: &SproutConfig) -> Arc<(Grid, ForecastTables)> {
    type Cache = Mutex<Vec<(String, Arc<(Grid, ForecastTables)>)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    // The fields the model depends on, bit-exact.
    let key = format!(
        "{:x}/{}/{:x}/{:x}/{:x}/{}",
        cfg.max_rate_pps.to_bits(),
        cfg.bins,
        cfg.sigma_pps.to_bits(),
        cfg.outage_escape_per_s.to_bits(),
        cfg.tick_ms.to_bits(),
        cfg.forecast_ticks
    );
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, m)) = guard.iter().find(|(k, _)| *k == key) {
        return Arc::clone(m);
    }
    let grid = Grid::new(cfg);
    let tables = ForecastTables::new(cfg, &grid);
    let m = Arc::new((grid, tables));
    guard.push((key, Arc::clone(&m)));
    m
}
