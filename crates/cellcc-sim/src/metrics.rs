//! Streaming metrics (definitions in `docs/metrics.md`).
//!
//! Everything here is bounded memory per flow: delays go into HDR histograms (three
//! significant digits; a flow's first 4096 samples are kept as a list, which gives the
//! same quantiles) plus exact sums for means; time series accumulate into one slot per
//! bin, so the time series grows with the run (one slot per flow per bin; its size is
//! estimated and bounded when the scenario is loaded, `scenario::limits`), as does the
//! optional mm-link packet log.

use cellcc_units::{Dur, Time};
use hdrhistogram::Histogram;
use serde::Serialize;

/// Histogram range: 1 µs to one hour, in µs, 3 significant digits (≤ 0.1 % error).
const HIST_MAX_US: u64 = 3_600_000_000;
const HIST_SIGFIG: u8 = 3;
/// Smoothing gain of the RFC 3550 §6.4.1 jitter estimator (the C2TCP papers' jitter).
const RFC3550_GAIN: f64 = 1.0 / 16.0;

/// Delay distribution: histogram for quantiles plus exact count/sum for the mean.
///
/// A flow with few samples keeps them in a list and builds no histogram: a full-range
/// histogram is ~180 KiB, three per flow, which a run of a thousand flows or cell UEs
/// would otherwise spend most of its time zeroing and merging. Past
/// [`SPARSE_SAMPLES`] the list moves into the histogram. Quantiles from the list are the
/// histogram's own (the same sample at the same rank, mapped to the same bucket bound),
/// so the two forms give identical figures.
#[derive(Clone)]
pub struct DelayStats {
    /// The histogram, once more than [`SPARSE_SAMPLES`] samples have arrived.
    hist: Option<Box<Histogram<u64>>>,
    /// Samples (µs, clamped) while there is no histogram.
    sparse: Vec<u64>,
    sum_ns: u128,
    count: u64,
    min_ns: u64,
}

/// Samples kept as a list before a flow's delays move into a histogram.
const SPARSE_SAMPLES: usize = 4096;

/// An empty histogram with the metrics' bounds.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, HIST_SIGFIG)
        .expect("static histogram bounds are valid")
}

/// The bucket layout every histogram shares, for mapping listed samples to bucket bounds
/// (bucket boundaries depend only on the bounds and significant digits).
fn layout() -> &'static Histogram<u64> {
    static LAYOUT: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
    LAYOUT.get_or_init(new_histogram)
}

impl Default for DelayStats {
    fn default() -> Self {
        DelayStats {
            hist: None,
            sparse: Vec::new(),
            sum_ns: 0,
            count: 0,
            min_ns: u64::MAX,
        }
    }
}

impl DelayStats {
    /// Adds one sample (clamped into 1 µs..1 h for the histogram; sum and minimum exact).
    pub fn record(&mut self, d: Dur) {
        self.record_us(d.as_us().clamp(1, HIST_MAX_US));
        self.sum_ns += d.as_ns() as u128;
        self.count += 1;
        self.min_ns = self.min_ns.min(d.as_ns());
    }

    /// Adds a clamped sample to the histogram or the list.
    fn record_us(&mut self, us: u64) {
        match &mut self.hist {
            // Cannot fail: the value is clamped into the histogram's range.
            Some(h) => h.record(us).expect("value clamped into range"),
            None => {
                self.sparse.push(us);
                if self.sparse.len() > SPARSE_SAMPLES {
                    self.histogram();
                }
            }
        }
    }

    /// The histogram, built from the list if there is none yet.
    fn histogram(&mut self) -> &mut Histogram<u64> {
        let sparse = &mut self.sparse;
        self.hist.get_or_insert_with(|| {
            let mut h = new_histogram();
            for us in sparse.drain(..) {
                h.record(us).expect("value clamped into range");
            }
            Box::new(h)
        })
    }

    /// Adds `other`'s samples, as if each had been recorded here too (histogram counts,
    /// sum, count and minimum all combine exactly).
    pub fn merge(&mut self, other: &DelayStats) {
        for &us in &other.sparse {
            self.record_us(us);
        }
        if let Some(h) = &other.hist {
            // Cannot fail: both histograms have the same bounds.
            self.histogram()
                .add(&**h)
                .expect("histograms with equal bounds add");
        }
        self.sum_ns += other.sum_ns;
        self.count += other.count;
        self.min_ns = self.min_ns.min(other.min_ns);
    }
    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// Mean in ms, `None` without samples.
    pub fn mean_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64 / 1e6)
    }
    /// Quantile `q` in ms (nearest-rank on the histogram), `None` without samples.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        (self.count > 0).then(|| self.value_at_quantile(q) as f64 / 1e3)
    }
    /// `Histogram::value_at_quantile` over the samples, histogram or list: the sample of
    /// rank `max(1, ⌈q·n⌉)` (q capped at 1), reported as the top of its bucket (the
    /// bottom for q = 0).
    fn value_at_quantile(&self, q: f64) -> u64 {
        if let Some(h) = &self.hist {
            return h.value_at_quantile(q);
        }
        let q = if q > 1.0 { 1.0 } else { q };
        let mut sorted = self.sparse.clone();
        sorted.sort_unstable();
        let rank = ((q * sorted.len() as f64).ceil() as u64).max(1) as usize;
        let Some(&us) = sorted.get(rank - 1) else {
            return 0;
        };
        if q == 0.0 {
            layout().lowest_equivalent(us)
        } else {
            layout().highest_equivalent(us)
        }
    }
    /// Smallest sample in ms (exact), `None` without samples.
    pub fn min_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.min_ns as f64 / 1e6)
    }
    /// Mean absolute deviation from the mean, ms: `Σ |dᵢ − d̄| / n`, the "mean deviation
    /// (absolute value) of delay" of C2TCP JSAC §VI. The mean `d̄` is exact; each sample
    /// enters at its histogram value (within 0.1 %, clamped to at least 1 µs), so that
    /// memory stays constant. `None` without samples.
    pub fn mean_abs_deviation_ms(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let mean_us = self.sum_ns as f64 / self.count as f64 / 1e3;
        // (bucket median, samples) in ascending order, from the histogram or the list
        // alike, so that both forms sum the same terms in the same order.
        let buckets: Vec<(u64, u64)> = match &self.hist {
            Some(h) => h
                .iter_recorded()
                .map(|v| {
                    (
                        h.median_equivalent(v.value_iterated_to()),
                        v.count_at_value(),
                    )
                })
                .collect(),
            None => {
                let mut medians: Vec<u64> = self
                    .sparse
                    .iter()
                    .map(|&us| layout().median_equivalent(us))
                    .collect();
                medians.sort_unstable();
                let mut grouped: Vec<(u64, u64)> = Vec::new();
                for us in medians {
                    match grouped.last_mut() {
                        Some((value, n)) if *value == us => *n += 1,
                        _ => grouped.push((us, 1)),
                    }
                }
                grouped
            }
        };
        let total_us: f64 = buckets
            .iter()
            .map(|&(value_us, n)| (value_us as f64 - mean_us).abs() * n as f64)
            .sum();
        Some(total_us / self.count as f64 / 1e3)
    }
}

/// Per-bin accumulators of one flow.
#[derive(Clone, Copy, Default)]
struct Bin {
    app_bytes: u64,
    egress_bytes: u64,
    owd_sum_ns: u128,
    qdelay_sum_ns: u128,
    packets: u64,
    cwnd: Option<u32>,
    ssthresh: Option<u32>,
    pacing_bps: Option<u64>,
    srtt_ns: Option<u64>,
    inflight: Option<u32>,
}

/// Metrics of one flow (or of the aggregate).
#[derive(Clone, Default)]
pub struct FlowMetrics {
    /// One-way delay of every data packet reaching the receiver (`t − sent_at`).
    pub owd: DelayStats,
    /// Queueing delay of every data packet reaching the receiver (`t − enqueued_at`, see
    /// `docs/metrics.md`).
    pub qdelay: DelayStats,
    /// RTT samples the sender took per ACK (Linux's `ca_rtt`).
    pub rtt: DelayStats,
    last_owd_ns: Option<u64>,
    jitter_sum_ns: u128,
    jitter_count: u64,
    rfc3550_j_ns: f64,
    rfc3550_sum: f64,
    /// Data bytes (IP length) the sender put on the wire, retransmissions included.
    pub sent_ip_bytes: u64,
    /// Data bytes (IP length) that left the bottleneck.
    pub egress_ip_bytes: u64,
    /// Charged bytes (IP length + framing) that left the bottleneck, for utilisation.
    pub egress_charged_bytes: u64,
    /// Data packets that reached the receiver.
    pub egress_packets: u64,
    /// When the first data packet reached the receiver.
    pub first_egress: Option<Time>,
    /// When the last data packet reached the receiver (zero before the first).
    pub last_egress: Time,
    /// Payload bytes delivered in order to the receiving application.
    pub app_bytes: u64,
    /// When the last byte of a finite flow reached the application.
    pub completed_at: Option<Time>,
    /// Data packets discarded on the path after entry: by the radio queue (drop-tail,
    /// drop-head, AQM, a `drop` outage) or the wired bottleneck's queue.
    pub drops_queue: u64,
    /// Data packets removed by the random loss model on entry to the link.
    pub drops_random: u64,
    /// Segments the sender retransmitted (fast retransmit, RACK, TLP, RTO).
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    bins: Vec<Bin>,
    /// Whether the per-bin accumulators are kept (see [`FlowMetrics::without_series`]).
    no_series: bool,
}

impl FlowMetrics {
    /// Metrics whose time series nobody reads (background flows): every bin folds into
    /// one scratch slot, so that a flow starting late in a long run does not allocate a
    /// slot for every bin before it.
    pub fn without_series() -> Self {
        FlowMetrics {
            no_series: true,
            ..FlowMetrics::default()
        }
    }

    fn bin(&mut self, t: Time, bin: Dur) -> &mut Bin {
        if self.no_series {
            if self.bins.is_empty() {
                self.bins.push(Bin::default());
            }
            return &mut self.bins[0];
        }
        let i = (t.as_ns() / bin.as_ns()) as usize;
        if self.bins.len() <= i {
            self.bins.resize(i + 1, Bin::default());
        }
        &mut self.bins[i]
    }

    /// A data packet left the bottleneck at `t`.
    pub fn on_egress(
        &mut self,
        t: Time,
        ip_len: u32,
        charged: u32,
        owd: Dur,
        qdelay: Dur,
        bin: Dur,
    ) {
        self.owd.record(owd);
        self.qdelay.record(qdelay);
        self.on_egress_counters(t, ip_len, charged, owd, qdelay, bin);
    }

    /// [`FlowMetrics::on_egress`] without the delay distributions: for aggregates, whose
    /// distributions are merged from their flows' at the end of a run
    /// ([`FlowMetrics::merge_delays`]) instead of being recorded twice per packet.
    pub fn on_egress_counters(
        &mut self,
        t: Time,
        ip_len: u32,
        charged: u32,
        owd: Dur,
        qdelay: Dur,
        bin: Dur,
    ) {
        let d = owd.as_ns();
        if let Some(prev) = self.last_owd_ns {
            let diff = d.abs_diff(prev);
            self.jitter_sum_ns += diff as u128;
            self.jitter_count += 1;
            // RFC 3550 §6.4.1: J += (|D| − J)/16.
            self.rfc3550_j_ns += (diff as f64 - self.rfc3550_j_ns) * RFC3550_GAIN;
            self.rfc3550_sum += self.rfc3550_j_ns;
        }
        self.last_owd_ns = Some(d);
        self.egress_ip_bytes += ip_len as u64;
        self.egress_charged_bytes += charged as u64;
        self.egress_packets += 1;
        self.first_egress.get_or_insert(t);
        self.last_egress = t;
        let b = self.bin(t, bin);
        b.egress_bytes += ip_len as u64;
        b.owd_sum_ns += owd.as_ns() as u128;
        b.qdelay_sum_ns += qdelay.as_ns() as u128;
        b.packets += 1;
    }

    /// Payload bytes reached the application at `t`.
    pub fn on_app_delivered(&mut self, t: Time, bytes: u64, bin: Dur) {
        self.app_bytes += bytes;
        self.bin(t, bin).app_bytes += bytes;
    }

    /// Sender state sampled at the end of the bin containing `t - 1ns`.
    pub fn sample(&mut self, t: Time, bin: Dur, s: &SenderSample) {
        let b = self.bin(Time(t.as_ns().saturating_sub(1)), bin);
        b.cwnd = Some(s.cwnd);
        b.ssthresh = Some(s.ssthresh);
        b.pacing_bps = Some(s.pacing_bps);
        b.srtt_ns = Some(s.srtt.as_ns());
        b.inflight = Some(s.inflight);
    }

    /// Data bytes (IP length) that left the bottleneck during bin `i`.
    pub fn bin_egress_bytes(&self, i: usize) -> u64 {
        self.bins.get(i).map_or(0, |b| b.egress_bytes)
    }

    /// Mean absolute difference of consecutive one-way delays, ms.
    pub fn jitter_ms(&self) -> Option<f64> {
        (self.jitter_count > 0).then(|| self.jitter_sum_ns as f64 / self.jitter_count as f64 / 1e6)
    }
    /// Time average of the RFC 3550 smoothed jitter, ms.
    pub fn rfc3550_jitter_ms(&self) -> Option<f64> {
        (self.jitter_count > 0).then(|| self.rfc3550_sum / self.jitter_count as f64 / 1e6)
    }
}

/// Instantaneous sender state for time series.
pub struct SenderSample {
    /// Congestion window, packets.
    pub cwnd: u32,
    /// Slow-start threshold, packets ([`cellcc_congestion::INFINITE_SSTHRESH`] while infinite).
    pub ssthresh: u32,
    /// Pacing rate, bytes per second (`sk_pacing_rate`).
    pub pacing_bps: u64,
    /// Smoothed RTT; zero before the first sample.
    pub srtt: Dur,
    /// Packets in flight (`tcp_packets_in_flight`).
    pub inflight: u32,
}

/// One row of the summary table (see `docs/metrics.md`).
#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    /// Flow index (0, 1, … in `[[flows]]` order), or an aggregate: −1 the downlink flows,
    /// −2 the background, −3 the uplink flows.
    pub flow: i64,
    /// The flow's scheme (an aggregate: the flows' common scheme, else `all`; `background`).
    pub scheme: String,
    /// The direction of the flow's data, `"down"` or `"up"` (an aggregate row: of the
    /// flows it sums).
    pub flow_direction: &'static str,
    /// When the flow started, s (aggregate: the earliest start; background: 0).
    pub start_s: f64,
    /// Payload bits delivered in order to the application ÷ the flow's active time, Mbit/s
    /// (goodput).
    pub throughput_mbps: f64,
    /// IP bits reaching the receiver ÷ (last arrival − first arrival), Mbit/s (Pantheon's
    /// "average throughput").
    pub pantheon_throughput_mbps: Option<f64>,
    /// Payload bytes delivered in order to the application.
    pub app_bytes: u64,
    /// Finite flows: from the start to the delivery of the last byte, s.
    pub completion_s: Option<f64>,
    /// Mean one-way delay, ms.
    pub owd_mean_ms: Option<f64>,
    /// Median one-way delay, ms.
    pub owd_p50_ms: Option<f64>,
    /// 95th percentile of the one-way delay, ms (Pantheon's delay).
    pub owd_p95_ms: Option<f64>,
    /// 99th percentile of the one-way delay, ms.
    pub owd_p99_ms: Option<f64>,
    /// Mean queueing delay, ms (mm-link / C2TCP convention).
    pub qdelay_mean_ms: Option<f64>,
    /// Median queueing delay, ms.
    pub qdelay_p50_ms: Option<f64>,
    /// 95th percentile of the queueing delay, ms.
    pub qdelay_p95_ms: Option<f64>,
    /// 99th percentile of the queueing delay, ms.
    pub qdelay_p99_ms: Option<f64>,
    /// Mean absolute deviation of the per-packet queueing delay from its mean, ms: the
    /// C2TCP papers' jitter ([`DelayStats::mean_abs_deviation_ms`]).
    pub qdelay_mdev_ms: Option<f64>,
    /// Mean absolute difference of consecutive one-way delays, ms.
    pub jitter_ms: Option<f64>,
    /// Time average of the RFC 3550 §6.4.1 smoothed jitter, ms (C2TCP's jitter).
    pub rfc3550_jitter_ms: Option<f64>,
    /// Mean RTT sample, ms.
    pub rtt_mean_ms: Option<f64>,
    /// Median RTT sample, ms.
    pub rtt_p50_ms: Option<f64>,
    /// 95th percentile of the RTT samples, ms.
    pub rtt_p95_ms: Option<f64>,
    /// Smallest RTT sample, ms.
    pub rtt_min_ms: Option<f64>,
    /// RTT samples taken.
    pub rtt_samples: u64,
    /// `drops_queue + drops_random`.
    pub drops: u64,
    /// Data packets discarded by a queue on the path (see [`FlowMetrics::drops_queue`]).
    pub drops_queue: u64,
    /// Data packets removed by the random loss model on entry.
    pub drops_random: u64,
    /// Segments the sender retransmitted.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// The sender's busy time, s (`tcpi_busy_time`); `None` for aggregates.
    pub busy_s: Option<f64>,
    /// Of it, the time the peer's receive window held new data back, s
    /// (`tcpi_rwnd_limited`).
    pub rwnd_limited_s: Option<f64>,
    /// Of it, the time the send buffer held the writer back, s (`tcpi_sndbuf_limited`).
    pub sndbuf_limited_s: Option<f64>,
    /// 1 − IP bytes that reached the receiver ÷ IP bytes sent (Pantheon); counts packets
    /// still in the network at the end.
    pub pantheon_loss_rate: Option<f64>,
    /// Charged bytes that reached the receiver ÷ the bytes the channel offered over the
    /// active time; `None` without capacity (background).
    pub utilisation: Option<f64>,
    /// `throughput_mbps ÷ rtt_mean_ms` (César's efficiency, Mbit/s per ms).
    pub efficiency: Option<f64>,
    /// `throughput_mbps ÷ (owd_mean_ms / 1000)` (Kleinrock's power).
    pub power: Option<f64>,
}

impl FlowMetrics {
    /// Adds a flow's one-way-delay, queueing-delay and RTT distributions to this
    /// aggregate's.
    pub fn merge_delays(&mut self, flow: &FlowMetrics) {
        self.owd.merge(&flow.owd);
        self.qdelay.merge(&flow.qdelay);
        self.rtt.merge(&flow.rtt);
    }

    /// Summarise; `active` is the span the throughput is averaged over and
    /// `capacity_bytes` the bottleneck's offered (charged) bytes over that span, for
    /// utilisation.
    pub fn summary(
        &self,
        flow: i64,
        scheme: &str,
        start: Time,
        active: Dur,
        capacity_bytes: Option<u64>,
    ) -> SummaryRow {
        let secs = active.as_secs_f64();
        let throughput_mbps = if secs > 0.0 {
            self.app_bytes as f64 * 8.0 / secs / 1e6
        } else {
            0.0
        };
        let pantheon_throughput_mbps = self.first_egress.and_then(|first| {
            let span = self.last_egress.saturating_since(first).as_secs_f64();
            (span > 0.0).then(|| self.egress_ip_bytes as f64 * 8.0 / span / 1e6)
        });
        let rtt_mean = self.rtt.mean_ms();
        let owd_mean = self.owd.mean_ms();
        SummaryRow {
            flow,
            scheme: scheme.to_string(),
            flow_direction: "down",
            start_s: start.as_secs_f64(),
            throughput_mbps,
            pantheon_throughput_mbps,
            app_bytes: self.app_bytes,
            completion_s: self
                .completed_at
                .map(|t| t.saturating_since(start).as_secs_f64()),
            owd_mean_ms: owd_mean,
            owd_p50_ms: self.owd.quantile_ms(0.5),
            owd_p95_ms: self.owd.quantile_ms(0.95),
            owd_p99_ms: self.owd.quantile_ms(0.99),
            qdelay_mean_ms: self.qdelay.mean_ms(),
            qdelay_p50_ms: self.qdelay.quantile_ms(0.5),
            qdelay_p95_ms: self.qdelay.quantile_ms(0.95),
            qdelay_p99_ms: self.qdelay.quantile_ms(0.99),
            qdelay_mdev_ms: self.qdelay.mean_abs_deviation_ms(),
            jitter_ms: self.jitter_ms(),
            rfc3550_jitter_ms: self.rfc3550_jitter_ms(),
            rtt_mean_ms: rtt_mean,
            rtt_p50_ms: self.rtt.quantile_ms(0.5),
            rtt_p95_ms: self.rtt.quantile_ms(0.95),
            rtt_min_ms: self.rtt.min_ms(),
            rtt_samples: self.rtt.count(),
            drops: self.drops_queue + self.drops_random,
            drops_queue: self.drops_queue,
            drops_random: self.drops_random,
            retransmits: self.retransmits,
            rtos: self.rtos,
            busy_s: None,
            rwnd_limited_s: None,
            sndbuf_limited_s: None,
            pantheon_loss_rate: (self.sent_ip_bytes > 0)
                .then(|| 1.0 - self.egress_ip_bytes as f64 / self.sent_ip_bytes as f64),
            utilisation: capacity_bytes
                .filter(|&c| c > 0)
                .map(|c| self.egress_charged_bytes as f64 / c as f64),
            // César: throughput (Mbit/s) per ms of RTT.
            efficiency: rtt_mean.filter(|&r| r > 0.0).map(|r| throughput_mbps / r),
            // Kleinrock's power: throughput (Mbit/s) over mean one-way delay (s).
            power: owd_mean
                .filter(|&d| d > 0.0)
                .map(|d| throughput_mbps / (d / 1e3)),
        }
    }
}

/// Columnar time series: one row per (flow, bin); flow −1 rows carry the link.
#[derive(Debug, Default, Clone, Serialize)]
pub struct TimeSeries {
    /// Flow of each row (−1: the link).
    pub flow: Vec<i64>,
    /// Start of each row's bin, s.
    pub t_s: Vec<f64>,
    /// Application bits delivered in the bin ÷ bin width, Mbit/s (flow rows).
    pub throughput_mbps: Vec<Option<f64>>,
    /// IP bits of data reaching the receiver in the bin ÷ bin width, Mbit/s (link rows: all
    /// scenario flows).
    pub egress_mbps: Vec<Option<f64>>,
    /// Mean one-way delay of the packets arriving in the bin, ms (flow rows).
    pub owd_ms: Vec<Option<f64>>,
    /// Mean queueing delay of the packets arriving in the bin, ms (flow rows).
    pub qdelay_ms: Vec<Option<f64>>,
    /// Congestion window at the end of the bin, packets (flow rows).
    pub cwnd: Vec<Option<u32>>,
    /// Slow-start threshold at the end of the bin, packets; empty while infinite (flow rows).
    pub ssthresh: Vec<Option<u32>>,
    /// Pacing rate at the end of the bin, Mbit/s (flow rows).
    pub pacing_mbps: Vec<Option<f64>>,
    /// Smoothed RTT at the end of the bin, ms; empty before the first sample (flow rows).
    pub srtt_ms: Vec<Option<f64>>,
    /// Packets in flight at the end of the bin (flow rows).
    pub inflight: Vec<Option<u32>>,
    /// Radio capacity offered in the bin, Mbit/s (link rows).
    pub capacity_mbps: Vec<Option<f64>>,
    /// Radio queue occupancy at the end of the bin, packets (link rows).
    pub queue_packets: Vec<Option<u64>>,
    /// Radio queue occupancy at the end of the bin, bytes (link rows).
    pub queue_bytes: Vec<Option<u64>>,
}

impl TimeSeries {
    /// Append the bins of one flow, from the bin containing `from` to `bins` bins.
    pub fn push_flow(
        &mut self,
        flow: i64,
        m: &FlowMetrics,
        bin: Dur,
        from_bin: usize,
        bins: usize,
    ) {
        let secs = bin.as_secs_f64();
        for i in from_bin..bins {
            let b = m.bins.get(i).copied().unwrap_or_default();
            self.flow.push(flow);
            self.t_s.push(i as f64 * secs);
            self.throughput_mbps
                .push(Some(b.app_bytes as f64 * 8.0 / secs / 1e6));
            self.egress_mbps
                .push(Some(b.egress_bytes as f64 * 8.0 / secs / 1e6));
            let mean = |sum: u128| (b.packets > 0).then(|| sum as f64 / b.packets as f64 / 1e6);
            self.owd_ms.push(mean(b.owd_sum_ns));
            self.qdelay_ms.push(mean(b.qdelay_sum_ns));
            self.cwnd.push(b.cwnd);
            self.ssthresh.push(
                b.ssthresh
                    .filter(|&s| s < cellcc_congestion::INFINITE_SSTHRESH),
            );
            self.pacing_mbps
                .push(b.pacing_bps.map(|r| r as f64 * 8.0 / 1e6));
            self.srtt_ms
                .push(b.srtt_ns.filter(|&s| s > 0).map(|s| s as f64 / 1e6));
            self.inflight.push(b.inflight);
            self.capacity_mbps.push(None);
            self.queue_packets.push(None);
            self.queue_bytes.push(None);
        }
    }

    /// Append one link row (flow −1).
    pub fn push_link(
        &mut self,
        t_s: f64,
        egress_mbps: f64,
        capacity_mbps: Option<f64>,
        queue: (u64, u64),
    ) {
        self.flow.push(-1);
        self.t_s.push(t_s);
        self.throughput_mbps.push(None);
        self.egress_mbps.push(Some(egress_mbps));
        self.owd_ms.push(None);
        self.qdelay_ms.push(None);
        self.cwnd.push(None);
        self.ssthresh.push(None);
        self.pacing_mbps.push(None);
        self.srtt_ms.push(None);
        self.inflight.push(None);
        self.capacity_mbps.push(capacity_mbps);
        self.queue_packets.push(Some(queue.0));
        self.queue_bytes.push(Some(queue.1));
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.flow.len()
    }
    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.flow.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_stats_mean_exact_and_quantiles_within_hdr_precision() {
        let mut s = DelayStats::default();
        for ms in 1..=100u64 {
            s.record(Dur::from_ms(ms));
        }
        assert_eq!(s.mean_ms(), Some(50.5));
        let p95 = s.quantile_ms(0.95).unwrap();
        assert!((p95 - 95.0).abs() <= 0.1, "p95 {p95}");
        assert_eq!(s.min_ms(), Some(1.0));
        assert_eq!(DelayStats::default().mean_ms(), None);
    }

    #[test]
    fn mean_absolute_deviation_of_delay() {
        let mut s = DelayStats::default();
        // 10, 20, 30, 60 ms: mean 30 ms, deviations 20, 10, 0, 30 ⇒ 15 ms.
        for ms in [10u64, 20, 30, 60] {
            s.record(Dur::from_ms(ms));
        }
        let mdev = s.mean_abs_deviation_ms().unwrap();
        assert!((mdev - 15.0).abs() <= 0.015, "{mdev}"); // histogram values within 0.1 %
        let mut constant = DelayStats::default();
        for _ in 0..100 {
            constant.record(Dur::from_ms(25));
        }
        assert!(constant.mean_abs_deviation_ms().unwrap() <= 0.025);
        assert_eq!(DelayStats::default().mean_abs_deviation_ms(), None);
        // Merged flows: the aggregate's deviation is that of all samples together.
        let mut all = s.clone();
        all.merge(&constant);
        let mean = (10.0 + 20.0 + 30.0 + 60.0 + 100.0 * 25.0) / 104.0;
        let exact = ([10.0f64, 20.0, 30.0, 60.0]
            .iter()
            .map(|d| (d - mean).abs())
            .sum::<f64>()
            + 100.0 * (25.0 - mean).abs())
            / 104.0;
        let merged = all.mean_abs_deviation_ms().unwrap();
        assert!(
            (merged - exact).abs() <= 0.001 * 60.0,
            "{merged} vs {exact}"
        );
    }

    #[test]
    fn jitter_definitions() {
        let mut m = FlowMetrics::default();
        let bin = Dur::from_ms(100);
        // One-way delays 10, 14, 12 ms: differences 4 and 2 ⇒ mean 3 ms.
        for (i, d) in [10u64, 14, 12].iter().enumerate() {
            m.on_egress(
                Time::from_ms(i as u64),
                1500,
                1504,
                Dur::from_ms(*d),
                Dur::ZERO,
                bin,
            );
        }
        assert_eq!(m.jitter_ms(), Some(3.0));
        // RFC 3550: J1 = 4/16 = 0.25; J2 = 0.25 + (2 − 0.25)/16 = 0.359375; mean 0.3046875.
        let j = m.rfc3550_jitter_ms().unwrap();
        assert!((j - 0.3046875).abs() < 1e-9, "{j}");
    }

    /// The sample list and the histogram give the same quantiles, alone and merged.
    #[test]
    fn listed_samples_and_the_histogram_agree() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [
            1usize,
            2,
            3,
            10,
            999,
            SPARSE_SAMPLES,
            SPARSE_SAMPLES + 1,
            9000,
        ] {
            let mut listed = DelayStats::default();
            let mut full = DelayStats::default();
            full.histogram();
            for _ in 0..n {
                let d = Dur::from_ns(next() % (1 << (10 + next() % 30)));
                listed.record(d);
                full.record(d);
            }
            let mut merged = DelayStats::default();
            merged.merge(&listed);
            merged.merge(&full);
            let mut merged_full = DelayStats::default();
            merged_full.histogram();
            merged_full.merge(&full);
            merged_full.merge(&full);
            for q in [0.0, 0.001, 0.05, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0, 1.5] {
                assert_eq!(listed.quantile_ms(q), full.quantile_ms(q), "n {n} q {q}");
                assert_eq!(
                    merged.quantile_ms(q),
                    merged_full.quantile_ms(q),
                    "n {n} q {q}"
                );
            }
        }
    }
}
