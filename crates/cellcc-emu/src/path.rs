//! One direction of the emulated path, sans-I/O: Bernoulli loss, a fixed delay and a
//! `cellcc-link` [`Link`], in Mahimahi's nesting `mm-delay D mm-link UP DOWN` with the
//! server outside the shells and the client inside:
//!
//! ```text
//!  downlink (server → client):  read ─► loss ─► delay D ─► queue + trace ─► [gate] ─► write
//!  uplink   (client → server):  read ─► loss ─► queue + trace ─► [gate] ─► delay D ─► write
//! ```
//!
//! The optional gate is a cellular scheduling stage placed where the simulator places it
//! (`crates/cellcc-link/src/cellular`): the base station's `DownlinkGate` after the
//! downlink link, the UE's `UplinkGrant` after the uplink link.
//!
//! With a delay trace ([`Direction::with_delay_trace`], `mm-file-delay`) the delay of
//! each packet is the trace's value at the time it enters the delay stage (its read time
//! on the downlink, its departure from the link or gate on the uplink); the stage stays
//! FIFO.
//!
//! Loss (one `mm-loss` shell per direction) is drawn as the packet enters the direction,
//! from a seeded ChaCha8 stream. The emulator feeds packets with [`Direction::ingress`]
//! at their read time, calls [`Direction::advance`] at (or after) [`Direction::next_wakeup`],
//! and writes what [`Direction::pop_ready`] returns, each with the time it was due; the
//! difference between the actual write time and that time is the packet's lateness.
//!
//! Times passed in must be non-decreasing. Every stage keeps its own schedule: a packet
//! released by the delay line at `t` is offered to the link at `t`, even when `advance`
//! runs later than `t`, so the link sees exactly the arrival times it would see in the
//! simulator.

use std::collections::VecDeque;
use std::io::Write;

use std::sync::Arc;

use cellcc_link::mmlog::MmLog;
use cellcc_link::{BernoulliLoss, DelayLine, DelayTrace, EnqueueResult, Link, Stage};
use cellcc_units::Time;
use rand_chacha::ChaCha8Rng;

/// Which way packets go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Way {
    /// Server → client: delayed, then queued and served by the downlink trace.
    Downlink,
    /// Client → server: queued and served by the uplink trace, then delayed.
    Uplink,
}

impl Way {
    /// `downlink` or `uplink`, for thread names and messages.
    pub fn name(self) -> &'static str {
        match self {
            Way::Downlink => "downlink",
            Way::Uplink => "uplink",
        }
    }
}

/// A packet due to leave the emulator.
#[derive(Debug, PartialEq, Eq)]
pub struct Ready<T> {
    /// The caller's payload, as it entered.
    pub item: T,
    /// IP length of the packet.
    pub ip_len: u32,
    /// When it was due to be written.
    pub due: Time,
}

/// Packet counters of one direction (the link's own counters are in [`Link::stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DirectionCounters {
    /// Packets that entered the direction.
    pub packets_in: u64,
    /// IP bytes that entered the direction.
    pub bytes_in: u64,
    /// Packets lost to the Bernoulli loss.
    pub lost: u64,
    /// Packets that left the direction (handed to [`Direction::pop_ready`]).
    pub packets_out: u64,
    /// IP bytes that left the direction.
    pub bytes_out: u64,
}

/// One direction: loss, delay and link, and an optional mm-link log of the link.
pub struct Direction<T> {
    way: Way,
    loss: BernoulliLoss,
    rng: ChaCha8Rng,
    delay: DelayLine<(T, u32)>,
    /// Time-varying delay replacing the fixed one, if any.
    delay_trace: Option<Arc<DelayTrace>>,
    link: Link<T>,
    /// Cellular scheduling stage after the link, if any.
    gate: Option<Box<dyn Stage<T> + Send>>,
    ready: VecDeque<Ready<T>>,
    counters: DirectionCounters,
    log: Option<MmLog<Box<dyn Write + Send>>>,
    /// The first error writing the log; logging stops there and the error is reported
    /// at the end.
    log_error: Option<std::io::Error>,
}

impl<T> Direction<T> {
    /// A direction `way` whose packets cross `link`, a delay line of `delay` and Bernoulli
    /// `loss` drawn from `rng`, logging the link to `log` if given.
    pub fn new(
        way: Way,
        link: Link<T>,
        delay: cellcc_units::Dur,
        loss: BernoulliLoss,
        rng: ChaCha8Rng,
        log: Option<MmLog<Box<dyn Write + Send>>>,
    ) -> Self {
        Direction {
            way,
            loss,
            rng,
            delay: DelayLine::new(delay),
            delay_trace: None,
            link,
            gate: None,
            ready: VecDeque::new(),
            counters: DirectionCounters::default(),
            log,
            log_error: None,
        }
    }

    /// Puts a cellular scheduling stage after the link.
    pub fn with_gate(mut self, gate: Box<dyn Stage<T> + Send>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Delays each packet by `trace`'s value at the time it enters the delay stage,
    /// instead of the fixed delay.
    pub fn with_delay_trace(mut self, trace: Arc<DelayTrace>) -> Self {
        self.delay_trace = Some(trace);
        self
    }

    /// Which way this direction carries packets.
    pub fn way(&self) -> Way {
        self.way
    }

    /// A packet read at `now` enters the direction.
    pub fn ingress(&mut self, now: Time, item: T, ip_len: u32) {
        self.counters.packets_in += 1;
        self.counters.bytes_in += u64::from(ip_len);
        if self.loss.p() > 0.0 && self.loss.drops(&mut self.rng) {
            self.counters.lost += 1;
            return;
        }
        match self.way {
            Way::Downlink => self.delay_push(now, item, ip_len),
            Way::Uplink => self.offer_to_link(now, item, ip_len),
        }
    }

    /// Runs every stage up to `now`; what is due goes to [`Direction::pop_ready`].
    pub fn advance(&mut self, now: Time) {
        if self.way == Way::Downlink {
            while let Some((at, (item, ip_len))) = self.delay.pop_ready_with_time(now) {
                self.offer_to_link(at, item, ip_len);
            }
        }
        self.link.advance(now);
        self.collect_link_output();
        if let Some(mut gate) = self.gate.take() {
            gate.advance(now);
            while let Some(r) = gate.pop_output() {
                self.after_gate(r.at, r.item, r.ip_len);
            }
            self.gate = Some(gate);
        }
        if self.way == Way::Uplink {
            while let Some((due, (item, ip_len))) = self.delay.pop_ready_with_time(now) {
                self.emit(Ready { item, ip_len, due });
            }
        }
    }

    /// When [`Direction::advance`] next has something to do; `None` when idle.
    pub fn next_wakeup(&self) -> Option<Time> {
        let gate = self.gate.as_ref().and_then(|g| g.next_wakeup());
        [self.delay.next_wakeup(), self.link.next_wakeup(), gate]
            .into_iter()
            .flatten()
            .min()
    }

    /// The next packet due to be written, in due order.
    pub fn pop_ready(&mut self) -> Option<Ready<T>> {
        self.ready.pop_front()
    }

    /// Packet counters so far.
    pub fn counters(&self) -> &DirectionCounters {
        &self.counters
    }

    /// The trace link.
    pub fn link(&self) -> &Link<T> {
        &self.link
    }

    /// Packets held by the delay line and the link (for conservation checks).
    pub fn held(&self) -> usize {
        self.delay.len()
            + self.link.queued_packets()
            + usize::from(self.link.has_packet_in_transit())
            + self.gate.as_ref().map_or(0, |g| g.len())
            + self.ready.len()
    }

    /// Finishes the log at `end`; returns the first log error, if any.
    pub fn finish_log(&mut self, end: Time) -> std::io::Result<()> {
        if let Some(e) = self.log_error.take() {
            self.log = None;
            return Err(e);
        }
        match self.log.take() {
            Some(log) => log.finish(end).map(drop),
            None => Ok(()),
        }
    }

    fn offer_to_link(&mut self, at: Time, item: T, ip_len: u32) {
        let charged = ip_len.saturating_add(self.link.service().framing_bytes());
        // The arrival, its refusal, then what the link reports, as the simulator logs
        // them (`Simulation::enqueue_radio`); the log puts the departures served up to
        // `at` before the arrival (Mahimahi's order).
        self.log_with(|log| log.arrival(at, charged));
        let result = self.link.enqueue(at, item, ip_len);
        if let EnqueueResult::Dropped(_) = result {
            self.log_with(|log| log.drop_on_arrival(at, charged));
        }
        self.collect_link_output();
    }

    /// Moves the link's departures on (to the writer, or into the uplink's delay line)
    /// and logs them and the link's drops.
    fn collect_link_output(&mut self) {
        let framing = self.link.service().framing_bytes();
        while let Some(drop) = self.link.pop_drop() {
            let size = drop.ip_len.saturating_add(framing);
            self.log_with(|log| log.link_drop(&drop, size));
        }
        while let Some(d) = self.link.pop_departure() {
            let size = d.ip_len.saturating_add(framing);
            self.log_with(|log| log.departure(d.departed_at, size, d.enqueued_at));
            match &mut self.gate {
                Some(gate) => gate.push(d.departed_at, d.item, d.ip_len),
                None => self.after_gate(d.departed_at, d.item, d.ip_len),
            }
        }
    }

    /// A packet leaving the link (or its gate) at `at`.
    fn after_gate(&mut self, at: Time, item: T, ip_len: u32) {
        match self.way {
            Way::Downlink => self.emit(Ready {
                item,
                ip_len,
                due: at,
            }),
            Way::Uplink => self.delay_push(at, item, ip_len),
        }
    }

    /// A packet enters the delay stage at `at`.
    fn delay_push(&mut self, at: Time, item: T, ip_len: u32) {
        match &self.delay_trace {
            Some(trace) => self
                .delay
                .push_with_delay(at, trace.delay_at(at), (item, ip_len)),
            None => self.delay.push(at, (item, ip_len)),
        }
    }

    fn emit(&mut self, ready: Ready<T>) {
        self.counters.packets_out += 1;
        self.counters.bytes_out += u64::from(ready.ip_len);
        self.ready.push_back(ready);
    }

    fn log_with(
        &mut self,
        f: impl FnOnce(&mut MmLog<Box<dyn Write + Send>>) -> std::io::Result<()>,
    ) {
        if let Some(log) = &mut self.log {
            if let Err(e) = f(log) {
                self.log_error = Some(e);
                self.log = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cellcc_link::{LinkService, QueueSpec, Trace, TraceMode};
    use cellcc_units::Dur;
    use rand_core::SeedableRng;

    use super::*;

    fn direction(
        way: Way,
        timestamps: Vec<u32>,
        delay_ms: u64,
        queue: QueueSpec,
    ) -> Direction<u32> {
        let trace = Arc::new(Trace::from_timestamps(timestamps, "t").unwrap());
        let link = Link::new(LinkService::trace(trace, TraceMode::Loop), queue);
        Direction::new(
            way,
            link,
            Dur::from_ms(delay_ms),
            BernoulliLoss::NONE,
            ChaCha8Rng::seed_from_u64(1),
            None,
        )
    }

    /// Runs until idle, advancing exactly at each wake-up; returns (item, due ms).
    fn drain(d: &mut Direction<u32>) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        while let Some(t) = d.next_wakeup() {
            d.advance(t);
            while let Some(r) = d.pop_ready() {
                out.push((r.item, r.due.as_ms()));
            }
        }
        out
    }

    #[test]
    fn downlink_delays_then_queues() {
        // One opportunity per ms. A packet read at 0.5 ms reaches the link at 10.5 ms and
        // takes the opportunity at 11 ms.
        let mut d = direction(Way::Downlink, vec![1], 10, QueueSpec::Infinite);
        d.ingress(Time::from_us(500), 1, 1500);
        d.ingress(Time::from_us(600), 2, 1500);
        assert_eq!(drain(&mut d), [(1, 11), (2, 12)]);
    }

    #[test]
    fn uplink_queues_then_delays() {
        // The link serves at 1 and 2 ms, then the 10 ms delay.
        let mut d = direction(Way::Uplink, vec![1], 10, QueueSpec::Infinite);
        d.ingress(Time::from_us(500), 1, 1500);
        d.ingress(Time::from_us(600), 2, 1500);
        assert_eq!(drain(&mut d), [(1, 11), (2, 12)]);
    }

    #[test]
    fn the_two_orders_differ_on_a_sparse_trace() {
        // Opportunities at 5, 10, 15 ... ms. Downlink: the packet reaches the link at
        // 3 ms and leaves at 5. Uplink: it leaves the link at 5 and arrives at 8.
        let mut down = direction(Way::Downlink, vec![5], 3, QueueSpec::Infinite);
        down.ingress(Time::ZERO, 7, 100);
        assert_eq!(drain(&mut down), [(7, 5)]);
        let mut up = direction(Way::Uplink, vec![5], 3, QueueSpec::Infinite);
        up.ingress(Time::ZERO, 7, 100);
        assert_eq!(drain(&mut up), [(7, 8)]);
    }

    #[test]
    fn late_advance_keeps_the_schedule() {
        // Advancing once, long after everything was due, gives the same due times.
        let mut d = direction(Way::Downlink, vec![1], 10, QueueSpec::Infinite);
        for i in 0..5 {
            d.ingress(Time::from_us(100 * i), i as u32, 1500);
        }
        d.advance(Time::from_ms(100));
        let due: Vec<u64> = std::iter::from_fn(|| d.pop_ready())
            .map(|r| r.due.as_ms())
            .collect();
        assert_eq!(due, [11, 12, 13, 14, 15]);
        assert_eq!(d.held(), 0);
    }

    #[test]
    fn droptail_drops_are_counted_and_conserved() {
        let queue = QueueSpec::DropTail {
            packets: Some(2),
            bytes: None,
        };
        let mut d = direction(Way::Uplink, vec![1], 0, queue);
        for i in 0..10 {
            d.ingress(Time::from_us(100), i, 1500);
        }
        let out = drain(&mut d);
        let stats = d.link().stats().clone();
        assert_eq!(out.len() as u64 + stats.drops_queue_full, 10);
        assert_eq!(d.counters().packets_out, out.len() as u64);
    }

    #[test]
    fn a_downlink_gate_releases_in_bursts_after_the_link() {
        // `lte-sr20-burst8`: the base station serves the UE every 8 TTIs (8 ms), so
        // packets leaving the link at 1, 2, 3 ms are written together at one instant.
        let sched = cellcc_link::SchedulingConfig {
            preset: "lte-sr20-burst8".into(),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        let mut d = direction(Way::Downlink, vec![1], 0, QueueSpec::Infinite)
            .with_gate(Box::new(sched.downlink_gate()));
        for i in 0..3 {
            d.ingress(Time::from_us(100 + i), i as u32, 1500);
        }
        let out = drain(&mut d);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|&(_, due)| due == out[0].1), "{out:?}");
        assert!(out[0].1 >= 3, "{out:?}");
        assert_eq!(d.held(), 0);
    }

    #[test]
    fn an_uplink_grant_comes_before_the_delay() {
        // LTE FDD SR every 5 ms: a packet leaving the uplink link at 1 ms waits for an
        // SR occasion, the grant (+4 ms) and the transmission (+4 ms), then the delay.
        let sched = cellcc_link::SchedulingConfig {
            preset: "lte-fdd-sr5".into(),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        let mut d = direction(Way::Uplink, vec![1], 10, QueueSpec::Infinite)
            .with_gate(Box::new(sched.uplink_gate()));
        d.ingress(Time::from_us(100), 7, 100);
        let out = drain(&mut d);
        assert_eq!(out.len(), 1);
        // At least link (1 ms) + grant and transmission (8 ms) + delay (10 ms).
        assert!(out[0].1 >= 19, "{out:?}");
    }

    #[test]
    fn a_delay_trace_delays_each_packet_by_its_value_at_arrival() {
        // Delays 10 ms in [0, 5) ms, 2 ms in [5, 10) ms. Downlink: the delay is taken at
        // the read time. A packet read at 1 ms reaches the link at 11 ms (served at 12);
        // one read at 6 ms would reach it at 8 ms but the stage is FIFO, so it follows
        // at 11 ms (served at 13); one read at 12 ms (step 2, the trace looped: 10 ms)
        // reaches it at 22 (served at 23).
        let trace =
            Arc::new(DelayTrace::new("d", 5, vec![Dur::from_ms(10), Dur::from_ms(2)]).unwrap());
        let mut down = direction(Way::Downlink, vec![1], 0, QueueSpec::Infinite)
            .with_delay_trace(trace.clone());
        down.ingress(Time::from_ms(1), 1, 1500);
        down.ingress(Time::from_ms(6), 2, 1500);
        down.ingress(Time::from_ms(12), 3, 1500);
        assert_eq!(drain(&mut down), [(1, 12), (2, 13), (3, 23)]);
        // Uplink: the delay is taken when the packet leaves the link. Read at 4.5 ms, it
        // leaves the link at 5 ms and takes that step's 2 ms.
        let mut up =
            direction(Way::Uplink, vec![1], 0, QueueSpec::Infinite).with_delay_trace(trace);
        up.ingress(Time::from_us(4_500), 7, 1500);
        assert_eq!(drain(&mut up), [(7, 7)]);
    }

    #[test]
    fn certain_loss_drops_everything_before_the_link() {
        let trace = Arc::new(Trace::from_timestamps(vec![1], "t").unwrap());
        let link = Link::new(
            LinkService::trace(trace, TraceMode::Loop),
            QueueSpec::Infinite,
        );
        let mut d = Direction::new(
            Way::Downlink,
            link,
            Dur::ZERO,
            BernoulliLoss::new(1.0),
            ChaCha8Rng::seed_from_u64(1),
            None,
        );
        d.ingress(Time::ZERO, 1u32, 100);
        assert_eq!(d.counters().lost, 1);
        assert_eq!(d.next_wakeup(), None);
    }
}
