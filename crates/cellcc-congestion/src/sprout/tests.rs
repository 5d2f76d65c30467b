//! Sprout formula tests with worked numbers.

use cellcc_units::{Dur, Time};

use super::model::{normal_cdf, normalize, observe, ForecastTables, Grid};
use super::*;
use crate::Sock;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn normal_cdf_matches_tables() {
    for (x, want) in [
        (0.0, 0.5),
        (0.5, 0.691_462),
        (1.0, 0.841_345),
        (1.5, 0.933_193),
        (-2.5, 0.006_210),
    ] {
        assert!(
            close(normal_cdf(x), want, 2e-6),
            "Φ({x}) = {}",
            normal_cdf(x)
        );
    }
}

/// Three grid points 0, 50, 100 packets/s; a 20 ms tick makes the Poisson means 0, 1, 2.
fn tiny() -> SproutConfig {
    SproutConfig {
        max_rate_pps: 100.0,
        bins: 3,
        // σ·√τ = 50 packets/s = one grid step.
        sigma_pps: 50.0 / 0.02f64.sqrt(),
        ..SproutConfig::default()
    }
}

#[test]
fn bayesian_update_on_a_hand_made_distribution() {
    // §3.2: posterior ∝ prior × Poisson(n | λτ). Flat prior, one packet observed:
    // weights 0, e^-1 = 0.367879, 2e^-2 = 0.270671 → 0, 0.576117, 0.423883.
    let grid = Grid::new(&tiny());
    let mut p = vec![1.0 / 3.0; 3];
    observe(&grid, &mut p, 1);
    assert!(close(p[0], 0.0, 1e-12));
    assert!(close(p[1], 0.576_117, 1e-6), "{p:?}");
    assert!(close(p[2], 0.423_883, 1e-6), "{p:?}");
    // No arrivals: the outage state gains (weights 1, e^-1, e^-2 on the flat prior).
    let mut p = vec![1.0 / 3.0; 3];
    observe(&grid, &mut p, 0);
    let s = 1.0 + (-1.0f64).exp() + (-2.0f64).exp();
    assert!(close(p[0], 1.0 / s, 1e-9), "{p:?}");
}

#[test]
fn brownian_step_and_sticky_outage() {
    let grid = Grid::new(&tiny());
    // Kernel of one grid step per σ: Φ(0.5) − Φ(−0.5), Φ(1.5) − Φ(0.5), Φ(2.5) − Φ(1.5).
    let mut out = Vec::new();
    grid.evolve(&[0.0, 1.0, 0.0], &mut out);
    assert!(close(out[0], 0.241_730, 1e-5), "{out:?}");
    assert!(close(out[1], 0.382_925, 1e-5), "{out:?}");
    assert!(close(out[2], 0.241_730, 1e-5), "{out:?}");
    // From the outage: stay with e^-0.02 = 0.980199; the escaping 0.0198013 diffuses
    // from 0 by the kernel (its centre cell lands back on 0).
    grid.evolve(&[1.0, 0.0, 0.0], &mut out);
    assert!(
        close(out[0], 0.980_199 + 0.019_801_3 * 0.382_925, 1e-6),
        "{out:?}"
    );
    assert!(close(out[1], 0.019_801_3 * 0.241_730, 1e-7), "{out:?}");
    assert!(close(out[2], 0.019_801_3 * 0.060_598, 1e-7), "{out:?}");
    normalize(&mut out);
    assert!(out[0] > 0.98, "the outage is sticky: {out:?}");
}

#[test]
fn one_tick_forecast_is_the_poisson_quantile() {
    // Certain at the top of the default grid, 1000 packets/s: one tick's arrivals are
    // Poisson(20); P(X ≤ 12) = 0.0390 < 5 % ≤ P(X ≤ 13) = 0.0661, so the forecast is 13.
    let cfg = SproutConfig::default();
    let grid = Grid::new(&cfg);
    let tables = ForecastTables::new(&cfg, &grid);
    let mut p = vec![0.0; 256];
    p[255] = 1.0;
    let mut support = Vec::new();
    ForecastTables::support(&p, &mut support);
    assert_eq!(tables.lower_quantile(&support, 1, 0.05, 0, None), 13);
    // The median of one tick is 20 (P(X ≤ 19) = 0.470, P(X ≤ 20) = 0.559).
    assert_eq!(tables.lower_quantile(&support, 1, 0.5, 0, None), 20);
    // Later ticks add Brownian uncertainty: eight ticks forecast well below 8 × 20.
    let c8 = tables.lower_quantile(&support, 8, 0.05, 0, None);
    assert!((100..150).contains(&c8), "C(8) = {c8}");
    // The outage point forecasts nothing.
    let mut z = vec![0.0; 256];
    z[0] = 1.0;
    ForecastTables::support(&z, &mut support);
    assert_eq!(tables.lower_quantile(&support, 8, 0.05, 0, None), 0);
}

/// Searching horizon h + 1 from horizon h's answer, with or without a hint, gives exactly
/// what a full search per horizon followed by the running maximum gives (the forecast
/// before the floor and hint were passed), on random distributions, sharp and spread.
#[test]
fn floored_forecast_equals_per_horizon_search_then_running_max() {
    let cfg = SproutConfig::default();
    let grid = Grid::new(&cfg);
    let tables = ForecastTables::new(&cfg, &grid);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut support = Vec::new();
    for round in 0..200 {
        let centre = next() * 255.0;
        let width = 0.5 + next() * if round % 2 == 0 { 3.0 } else { 60.0 };
        let mut p: Vec<f64> = (0..256)
            .map(|i| (-((i as f64 - centre) / width).powi(2)).exp())
            .collect();
        normalize(&mut p);
        ForecastTables::support(&p, &mut support);
        for quantile in [0.05, 0.5, 0.95] {
            let mut reference = [0u32; 8];
            for (h, v) in reference.iter_mut().enumerate() {
                *v = tables.lower_quantile(&support, h + 1, quantile, 0, None);
            }
            for h in 1..8 {
                reference[h] = reference[h].max(reference[h - 1]);
            }
            // Hints: none, exact, near, far, beyond the range.
            for hint_shift in [None, Some(0i64), Some(-1), Some(2), Some(-40), Some(1000)] {
                let mut floor = 0;
                for (h, &want) in reference.iter().enumerate() {
                    let hint = hint_shift.map(|d| (i64::from(want) + d).max(0) as u32);
                    floor = tables.lower_quantile(&support, h + 1, quantile, floor, hint);
                    assert_eq!(
                        floor,
                        want,
                        "round {round} q {quantile} h {} hint {hint:?}",
                        h + 1
                    );
                }
            }
        }
    }
}

/// Feed `pps` packets per second of MSS payload from `from` for `secs`.
fn feed(r: &mut SproutReceiver, from: Time, pps: f64, secs: f64) -> Time {
    let n = (pps * secs) as u64;
    let gap = Dur::from_ns((1e9 / pps) as u64);
    let mut t = from;
    for _ in 0..n {
        r.on_data(t, 1448);
        t += gap;
    }
    t
}

#[test]
fn receiver_learns_a_steady_rate_and_an_outage() {
    let cfg = SproutConfig::default();
    let mut r = SproutReceiver::new(&cfg);
    let t = feed(&mut r, Time::ZERO, 500.0, 2.0);
    let mean = r.mean_rate_pps();
    assert!((450.0..550.0).contains(&mean), "mean {mean}");
    let f = r.forecast(t);
    // 5 ticks at 500 packets/s is 50 packets; the 5th percentile lies below, not far.
    assert!((30..50).contains(&f[4]), "C(5) = {}", f[4]);
    assert!(f.windows(2).take(7).all(|w| w[0] <= w[1]), "{f:?}");
    // Half a second of silence: an outage.
    let f = r.forecast(t + Dur::from_ms(500));
    assert_eq!(f[4], 0, "{f:?}");
    assert!(r.distribution()[0] > 0.9);
}

#[test]
fn empty_ticks_right_after_arrivals_are_not_observed() {
    let cfg = SproutConfig::default();
    let mut r = SproutReceiver::new(&cfg);
    r.on_data(Time::ZERO, 1448);
    r.on_data(Time::from_ms(5), 1448);
    // Ticks [0,20) (2 packets), then [20,40), [40,60) empty but within 50 ms of the
    // arrivals' tick start (0 + 50 ms); [60,80), [80,100) empty and observed.
    let _ = r.forecast(Time::from_ms(100));
    assert_eq!((r.observed_ticks, r.skipped_ticks), (3, 2));
}

#[test]
fn sender_window_walks_along_the_forecast() {
    let mut s = Sprout::new(SproutConfig::default());
    let mut sock = Sock::new(1448, Time::from_ms(1000));
    assert_eq!(s.window_at(sock.now), None);
    s.on_receiver_feedback(
        &mut sock,
        &ReceiverFeedback::new(&[10, 20, 30, 40, 50, 60, 70, 80]),
    );
    // §3.4: deliveries within the next 5 ticks: C(5) − C(0) = 50.
    assert_eq!(s.window_at(sock.now), Some(50));
    // 45 ms later (k = 2 ticks): C(7) − C(2) = 50; at k = 5: C(8) − C(5) = 30.
    assert_eq!(s.window_at(sock.now + Dur::from_ms(45)), Some(50));
    assert_eq!(s.window_at(sock.now + Dur::from_ms(100)), Some(30));
    assert_eq!(s.window_at(sock.now + Dur::from_ms(500)), Some(0));
    sock.now += Dur::from_ms(500);
    s.cong_control(&mut sock, &RateSample::default());
    assert_eq!(sock.cwnd, 2, "the floor stands in for heartbeats");
}

#[test]
fn config_errors_name_the_field() {
    let bad = SproutConfig {
        target_ticks: 9,
        ..SproutConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "target_ticks");
    let bad = SproutConfig {
        quantile: 1.0,
        ..SproutConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "quantile");
    assert!(SproutConfig::default().validate().is_ok());
}
