//! What a run produces, and how the end state is reduced to it.

use cellcc_units::{Dur, Time};

use super::Simulation;
use crate::metrics::{SummaryRow, TimeSeries};
use crate::scenario::Direction;

/// Everything a run produces.
#[derive(Debug, Clone)]
pub struct SimOutput {
    /// One row per flow, then the aggregate rows (see [`SummaryRow::flow`]).
    pub summary: Vec<SummaryRow>,
    /// Per-bin time series of every flow and of the link.
    pub timeseries: TimeSeries,
    /// Downlink capacity and use over the measured span.
    pub link: LinkSummary,
    /// Events taken from the event queue before the end of the run (for benchmarks).
    pub events: u64,
    /// The downlink radio link's mm-link log, when `[metrics] packet_log = true`.
    pub packet_log: Option<String>,
    /// Per flow: the congestion control's phase and named estimates at the end of the
    /// run ([`cellcc_congestion::CongestionControl::info`]).
    pub cc_info: Vec<CcInfo>,
    /// Every background short TCP flow, in start order.
    pub short_flows: Vec<ShortFlowRecord>,
    /// Every ACK the senders received, when `[metrics] ack_log = true`.
    pub ack_log: Option<Vec<AckRecord>>,
    /// Packet accounting at the end of the run.
    pub conservation: Conservation,
}

/// A flow's congestion control at the end of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CcInfo {
    /// The flow's index (scenario flows first, then background TCP flows).
    pub flow: u32,
    /// The algorithm's state at the end ([`cellcc_congestion::CongestionControl::phase`]).
    pub phase: &'static str,
    /// Named estimates the algorithm reports (e.g. César's `su_ms`).
    pub values: Vec<(&'static str, f64)>,
}

/// A background short TCP flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ShortFlowRecord {
    /// Index of its `[[background]]` source.
    pub background: u32,
    /// When it started.
    pub start: Time,
    /// Application bytes.
    pub bytes: u64,
    /// When its last byte reached the application, if it did.
    pub completed: Option<Time>,
}

/// One ACK arriving at its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct AckRecord {
    /// The flow's index (scenario flows first, then background TCP flows).
    pub flow: u32,
    /// Arrival time at the sender.
    pub t: Time,
    /// The RTT sample this ACK produced, if any.
    pub rtt: Option<Dur>,
}

/// Packet accounting at the end of a run: every packet sent was delivered, dropped, or
/// is still in the network (in a delay line, a queue, or in service).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Conservation {
    /// Data packets put on the wire (retransmissions and background packets included).
    pub data_sent: u64,
    /// Data packets that reached their receiver.
    pub data_delivered: u64,
    /// Data packets dropped on the way (queues, random loss, outages).
    pub data_dropped: u64,
    /// Data packets still in a queue, delay line or in service at the end.
    pub data_in_network: u64,
    /// ACKs put on the wire.
    pub acks_sent: u64,
    /// ACKs that reached their sender.
    pub acks_delivered: u64,
    /// ACKs dropped on the way.
    pub acks_dropped: u64,
    /// ACKs still in the network at the end.
    pub acks_in_network: u64,
}

/// Downlink capacity and use over the measured span.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LinkSummary {
    /// The downlink's label (trace file, rate, `synth <model> (seed N)` or a cell).
    pub downlink: String,
    /// The uplink's label.
    pub uplink: String,
    /// Capacity of the first flow's channel from the first start to the end, Mbit/s.
    pub capacity_mbps: f64,
    /// The downlink aggregate's utilisation (see [`SummaryRow::utilisation`]).
    pub utilisation: Option<f64>,
    /// The downlink aggregate's Pantheon throughput, Mbit/s.
    pub delivered_mbps: f64,
    /// The downlink aggregate's drops.
    pub drops: u64,
}

impl Simulation<'_> {
    /// Reduce the end state to the run's output.
    pub fn finish(mut self) -> SimOutput {
        let end = self.end;
        let bin = self.sc.metrics.bin;
        // The scenario's own flows come first in `flows`; background flows follow.
        let main = self.sc.flows.len();
        let first_of = |dir: Option<Direction>| {
            self.flows[..main]
                .iter()
                .filter(|f| dir.is_none_or(|d| f.dir == d))
                .map(|f| f.start)
                .min()
        };
        // The downlink aggregate spans from its first flow's start (from the first
        // flow's when every flow is an uplink one).
        let first_start = first_of(Some(Direction::Down))
            .or(first_of(None))
            .unwrap_or(Time::ZERO);
        let first_up = first_of(Some(Direction::Up));
        // Aggregates record counters per packet and take their delay distributions
        // from their flows here (exactly what recording every sample twice would give).
        for (i, m) in self.metrics.iter().enumerate() {
            match (i < main, self.flows[i].dir) {
                (true, Direction::Down) => self.all.merge_delays(m),
                (true, Direction::Up) => self.all_up.merge_delays(m),
                (false, _) => self.bg.merge_delays(m),
            }
        }
        // Utilisation refers to the channel of the first flow's UE (in a cell: as if
        // that UE were alone).
        let ue0 = self.flows.first().map_or(0, |f| f.ue);
        let mut summary = Vec::with_capacity(main + 2);
        for (i, f) in self.flows[..main].iter().enumerate() {
            let m = &self.metrics[i];
            let stop = m.completed_at.unwrap_or(end);
            let active = stop.saturating_since(f.start);
            // Utilisation refers to the link the flow's data crosses.
            let cap = match f.dir {
                Direction::Down => self.radio.link.capacity_bytes(f.ue, f.start, stop),
                Direction::Up => self.up_radio[f.ue as usize]
                    .link
                    .capacity_bytes(f.start, stop),
            };
            let mut row = m.summary(i as i64, &f.scheme, f.start, active, Some(cap));
            row.flow_direction = f.dir.as_str();
            if let Some(s) = f.sender.as_ref() {
                let t = s.chrono_times(end);
                row.busy_s = Some(t.busy.as_secs_f64());
                row.rwnd_limited_s = Some(t.rwnd_limited.as_secs_f64());
                row.sndbuf_limited_s = Some(t.sndbuf_limited.as_secs_f64());
            }
            summary.push(row);
        }
        let cap_all = self.radio.link.capacity_bytes(ue0, first_start, end);
        // The aggregate's label: the scheme when its flows share one, else "all".
        let label_of = |dir: Direction| {
            let mut schemes = self.flows[..main]
                .iter()
                .filter(|f| f.dir == dir)
                .map(|f| f.scheme.as_str());
            match schemes.next() {
                Some(first) if schemes.all(|s| s == first) => first.to_string(),
                _ => "all".to_string(),
            }
        };
        let all_label = label_of(Direction::Down);
        let all_row = self.all.summary(
            -1,
            &all_label,
            first_start,
            end.saturating_since(first_start),
            Some(cap_all),
        );
        let link = LinkSummary {
            downlink: self.sc.downlink.label.clone(),
            uplink: self.sc.uplink.label.clone(),
            capacity_mbps: {
                let secs = end.saturating_since(first_start).as_secs_f64();
                if secs > 0.0 {
                    cap_all as f64 * 8.0 / secs / 1e6
                } else {
                    0.0
                }
            },
            utilisation: all_row.utilisation,
            delivered_mbps: all_row.pantheon_throughput_mbps.unwrap_or(0.0),
            drops: all_row.drops,
        };
        summary.push(all_row);
        if let Some(first_up) = first_up {
            // The scenario's uplink flows, as one row (flow = -3), against the uplink
            // of the first of them's UE.
            let ue = self.flows[..main]
                .iter()
                .find(|f| f.dir == Direction::Up)
                .map_or(0, |f| f.ue);
            let cap = self.up_radio[ue as usize]
                .link
                .capacity_bytes(first_up, end);
            let mut row = self.all_up.summary(
                -3,
                &label_of(Direction::Up),
                first_up,
                end.saturating_since(first_up),
                Some(cap),
            );
            row.flow_direction = Direction::Up.as_str();
            summary.push(row);
        }
        if self.flows.len() > main {
            // Everything the background sources carried, as one row (flow = -2).
            summary.push(self.bg.summary(
                -2,
                "background",
                Time::ZERO,
                end.saturating_since(Time::ZERO),
                None,
            ));
        }

        let bins = (end.as_ns().div_ceil(bin.as_ns())) as usize;
        let mut ts = TimeSeries::default();
        for (i, f) in self.flows[..main].iter().enumerate() {
            let from = (f.start.as_ns() / bin.as_ns()) as usize;
            ts.push_flow(i as i64, &self.metrics[i], bin, from, bins);
        }
        let secs = bin.as_secs_f64();
        for b in 0..bins {
            let t0 = Time(b as u64 * bin.as_ns());
            let t1 = Time(((b as u64 + 1) * bin.as_ns()).min(end.as_ns()));
            let cap = self.radio.link.capacity_bytes(ue0, t0, t1) as f64 * 8.0
                / t1.saturating_since(t0).as_secs_f64().max(1e-12)
                / 1e6;
            let egress = self.all.bin_egress_bytes(b) as f64 * 8.0 / secs / 1e6;
            let q = self.link_series.get(b).copied().unwrap_or((0, 0));
            ts.push_link(b as f64 * secs, egress, Some(cap), q);
        }
        let packet_log = self.log.take().map(|l| {
            let bytes = l.finish(end).expect("writes to memory");
            String::from_utf8(bytes).expect("the log is ASCII")
        });
        let mut conservation = self.count;
        let down_held = (self.down_pre.held()
            + self.radio.link.queued_packets()
            + self.radio.link.in_transit()
            + self.down_post.iter().map(|c| c.held()).sum::<usize>())
            as u64;
        let up_held = self
            .up_radio
            .iter()
            .map(|r| r.link.queued_packets() + usize::from(r.link.has_packet_in_transit()))
            .sum::<usize>() as u64
            + self.up_post.iter().map(|c| c.held() as u64).sum::<u64>();
        // What the stages hold is counted from the stages themselves; only the split of
        // each direction's packets into data and ACKs uses the kind counted in and out
        // (see `down_acks` and `up_data_in_network`), so a stage that loses a packet still shows.
        let down_acks = self.down_acks.len() as u64;
        debug_assert!(
            down_held >= down_acks && up_held >= self.up_data_in_network,
            "every counted packet is held by a stage of its direction until it leaves"
        );
        conservation.data_in_network = down_held.wrapping_sub(down_acks) + self.up_data_in_network;
        conservation.acks_in_network = up_held.wrapping_sub(self.up_data_in_network) + down_acks;
        let cc_info = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(i, f)| {
                let cc = f.sender.as_ref()?.cc();
                Some(CcInfo {
                    flow: i as u32,
                    phase: cc.phase(),
                    values: cc.info(),
                })
            })
            .collect();
        SimOutput {
            short_flows: std::mem::take(&mut self.short_flows),
            summary,
            cc_info,
            timeseries: ts,
            link,
            events: self.events,
            packet_log,
            ack_log: self.ack_log.take(),
            conservation,
        }
    }
}
