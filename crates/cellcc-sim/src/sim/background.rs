//! Background traffic inside the event loop: UDP sources and the arrivals of short TCP
//! flows (`crate::traffic` generates them).

use super::{DataSegment, Event, Flow, FlowMetrics, Origin, Packet, ShortFlowRecord, Simulation};
use crate::packet::HEADER_BYTES;
use crate::scenario::Direction;
use crate::tcp::App;
use crate::traffic::UdpSource;
use cellcc_units::Time;

/// A background UDP packet's payload length for a given IP length.
fn udp_payload(ip_len: u32) -> u32 {
    ip_len.saturating_sub(HEADER_BYTES).max(1)
}

impl Simulation<'_> {
    /// Register UDP source `background[k]` as a flow and schedule its first packet.
    pub(super) fn add_udp(&mut self, k: usize, ue: u32, mut src: UdpSource) {
        let flow = self.flows.len() as u32;
        self.flows.push(Flow::new(
            "udp".into(),
            Time::ZERO,
            ue,
            Direction::Down,
            Origin::Udp(k),
            App::Bulk,
        ));
        // Background flows have no time-series rows.
        self.metrics.push(FlowMetrics::without_series());
        let idx = self.udp.len() as u32;
        let first = src.next_send();
        self.udp.push((src, flow));
        if let Some(t) = first {
            self.push(t, Event::Udp(idx));
        }
    }

    /// Background UDP source `k` sends a packet now, then schedules the next.
    pub(super) fn send_udp(&mut self, k: u32) {
        let (src, flow) = &mut self.udp[k as usize];
        let flow = *flow;
        let ip_len = src.packet_bytes();
        let next = src.next_send();
        let m = &mut self.metrics[flow as usize];
        let seg = DataSegment {
            flow,
            seq: m.sent_ip_bytes / u64::from(ip_len.max(1)),
            len: udp_payload(ip_len),
            tsval: 0,
            tsecr: 0,
            sent_at: self.now,
            retransmit: false,
            syn: false,
        };
        let len = seg.ip_len();
        m.sent_ip_bytes += u64::from(len);
        self.bg.sent_ip_bytes += u64::from(len);
        self.count.data_sent += 1;
        if self.down_loss.drops(&mut self.down_rng) {
            self.count.data_dropped += 1;
            self.metrics[flow as usize].drops_random += 1;
            self.bg.drops_random += 1;
        } else {
            self.send_down(Packet::Data(seg), len);
        }
        if let Some(t) = next {
            self.push(t, Event::Udp(k));
        }
    }

    /// Background generator `k`'s next short TCP flow starts now.
    pub(super) fn short_arrival(&mut self, k: u32) {
        let (arrivals, pending, background) = &mut self.short[k as usize];
        let background = *background;
        let Some(flow) = pending.take() else {
            return;
        };
        *pending = arrivals.next_flow();
        if let Some(next) = pending {
            let t = next.start;
            self.push(t, Event::ShortArrival(k));
        }
        let cfg = &self.sc.background[background];
        let i = self.flows.len() as u32;
        self.short_flows.push(ShortFlowRecord {
            background: background as u32,
            start: flow.start,
            bytes: flow.bytes,
            completed: None,
        });
        let origin = Origin::Short {
            background,
            record: self.short_flows.len() - 1,
        };
        let app = App::Bytes(flow.bytes.max(1));
        let scheme = cfg.scheme.clone();
        self.flows.push(Flow::new(
            scheme,
            flow.start,
            cfg.ue,
            Direction::Down,
            origin,
            app,
        ));
        // Background flows have no time-series rows.
        self.metrics.push(FlowMetrics::without_series());
        self.start_or_fail(i);
    }
}
