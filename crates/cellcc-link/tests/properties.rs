//! Property tests over random traces, queues and arrival sequences.
//!
//! The trace link is compared with a reference model that follows Mahimahi's
//! `rationalize` literally: it walks every opportunity one by one (no skipping) and
//! keeps its own drop-tail/drop-head bookkeeping.

mod common;

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use cellcc_link::{EnqueueResult, Link, LinkService, QueueSpec, Trace, TraceMode};
use cellcc_units::{Bandwidth, Dur, Time};
use proptest::prelude::*;

const OPPORTUNITY: u64 = 1504;
const FRAMING: u32 = 4;

/// Mahimahi's link queue, transcribed directly.
struct Reference {
    opportunities_ns: Vec<u64>,
    next: usize,
    queue: VecDeque<(u32, u64)>,
    in_transit: Option<(u32, u64)>,
    spec: QueueSpec,
    departures: Vec<(u32, Time)>,
    dropped: BTreeSet<u32>,
}

impl Reference {
    fn rationalize(&mut self, now: u64) {
        while self.next < self.opportunities_ns.len() && self.opportunities_ns[self.next] <= now {
            let at = self.opportunities_ns[self.next];
            self.next += 1;
            let mut budget = OPPORTUNITY;
            while budget > 0 {
                if self.in_transit.is_none() {
                    match self.queue.pop_front() {
                        Some(p) => self.in_transit = Some(p),
                        None => break,
                    }
                }
                let (id, left) = self.in_transit.as_mut().unwrap();
                let sent = budget.min(*left);
                *left -= sent;
                budget -= sent;
                if *left == 0 {
                    self.departures.push((*id, Time(at)));
                    self.in_transit = None;
                }
            }
        }
    }

    fn bytes(&self) -> u64 {
        self.queue.iter().map(|p| p.1).sum()
    }

    fn over(&self, packets: u64, bytes: u64) -> bool {
        let (p_lim, b_lim) = match self.spec {
            QueueSpec::Infinite => (None, None),
            QueueSpec::DropTail { packets, bytes } | QueueSpec::DropHead { packets, bytes } => {
                (packets, bytes)
            }
            QueueSpec::Codel(_) | QueueSpec::Pie(_) => {
                unreachable!("queue_strategy generates FIFO disciplines only")
            }
        };
        p_lim.is_some_and(|l| packets > l) || b_lim.is_some_and(|l| bytes > l)
    }

    fn arrive(&mut self, now: u64, id: u32, ip_len: u32) {
        self.rationalize(now);
        let size = u64::from(ip_len) + u64::from(FRAMING);
        if size > OPPORTUNITY {
            self.dropped.insert(id);
            return;
        }
        match self.spec {
            QueueSpec::DropHead { .. } => {
                self.queue.push_back((id, size));
                while self.over(self.queue.len() as u64, self.bytes()) {
                    let (head, _) = self.queue.pop_front().unwrap();
                    self.dropped.insert(head);
                }
            }
            _ => {
                if self.over(self.queue.len() as u64 + 1, self.bytes() + size) {
                    self.dropped.insert(id);
                } else {
                    self.queue.push_back((id, size));
                }
            }
        }
    }
}

fn trace_strategy() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(0u32..40, 1..12).prop_map(|mut ts| {
        ts.sort_unstable();
        if *ts.last().unwrap() == 0 {
            *ts.last_mut().unwrap() = 1;
        }
        ts
    })
}

fn queue_strategy() -> impl Strategy<Value = QueueSpec> {
    let limits =
        (prop::option::of(1u64..6), prop::option::of(100u64..6000)).prop_map(|(packets, bytes)| {
            if packets.is_none() && bytes.is_none() {
                (Some(3), None)
            } else {
                (packets, bytes)
            }
        });
    prop_oneof![
        Just(QueueSpec::Infinite),
        limits
            .clone()
            .prop_map(|(packets, bytes)| QueueSpec::DropTail { packets, bytes }),
        limits.prop_map(|(packets, bytes)| QueueSpec::DropHead { packets, bytes }),
    ]
}

/// (gap before the arrival in µs, IP length, whether to call `advance` at a random
/// time before it).
fn arrivals_strategy() -> impl Strategy<Value = Vec<(u64, u32, Option<u64>)>> {
    // Whole-millisecond gaps often land arrivals exactly on opportunities.
    let gap_us = prop_oneof![0u64..4000, (0u64..4).prop_map(|ms| ms * 1000)];
    prop::collection::vec(
        (
            gap_us,
            prop_oneof![0u32..200, 1300u32..1510],
            prop::option::of(0u64..4000),
        ),
        0..60,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn trace_link_matches_mahimahi_reference(
        ts in trace_strategy(),
        once in any::<bool>(),
        spec in queue_strategy(),
        arrivals in arrivals_strategy(),
        event_driven in any::<bool>(),
    ) {
        let mode = if once { TraceMode::Once } else { TraceMode::Loop };
        let trace = Arc::new(Trace::from_timestamps(ts.clone(), "random").unwrap());
        let mut link: Link<u32> = Link::new(LinkService::trace(trace.clone(), mode), spec.clone());

        let last_arrival_ns: u64 = arrivals.iter().map(|a| a.0 * 1000).sum();
        // Enough for every queued packet to drain on a looping trace: at most one full
        // period per packet.
        let horizon = Time(last_arrival_ns) + Dur::from_ms(45 * (arrivals.len() as u64 + 2));
        let opportunities_ns: Vec<u64> =
            trace.opportunity_times_ms(mode, horizon.as_ms() + 1).iter().map(|ms| ms * 1_000_000).collect();
        let mut reference = Reference {
            opportunities_ns: opportunities_ns.clone(),
            next: 0,
            queue: VecDeque::new(),
            in_transit: None,
            spec,
            departures: vec![],
            dropped: BTreeSet::new(),
        };

        let mut departures: Vec<(u32, Time, Time)> = vec![];
        let mut dropped = BTreeSet::new();
        let mut collect = |link: &mut Link<u32>, dropped: &mut BTreeSet<u32>| {
            while let Some(d) = link.pop_departure() {
                departures.push((d.item, d.enqueued_at, d.departed_at));
            }
            while let Some(d) = link.pop_drop() {
                dropped.insert(d.item);
            }
        };
        let mut now = Time::ZERO;
        for (id, &(gap_us, ip_len, probe_us)) in arrivals.iter().enumerate() {
            let id = id as u32;
            let arrival = now + Dur::from_us(gap_us);
            if event_driven {
                while let Some(t) = link.next_wakeup().filter(|&t| t <= arrival) {
                    link.advance(t);
                    collect(&mut link, &mut dropped);
                }
            }
            if let Some(probe) = probe_us.filter(|&p| p <= gap_us) {
                link.advance(now + Dur::from_us(probe));
            }
            now = arrival;
            reference.arrive(now.as_ns(), id, ip_len);
            if let EnqueueResult::Dropped(item) = link.enqueue(now, id, ip_len) {
                prop_assert_eq!(item, id);
                dropped.insert(item);
            }
            collect(&mut link, &mut dropped);
        }
        link.advance(horizon);
        collect(&mut link, &mut dropped);
        reference.rationalize(horizon.as_ns());

        // Same schedule and same drops as the reference.
        let got: Vec<(u32, Time)> = departures.iter().map(|&(id, _, at)| (id, at)).collect();
        prop_assert_eq!(&got, &reference.departures);
        prop_assert_eq!(&dropped, &reference.dropped);

        // Conservation: every packet departed, was dropped, or is still in the link.
        let still_inside = link.queued_packets() + usize::from(link.has_packet_in_transit());
        prop_assert_eq!(departures.len() + dropped.len() + still_inside, arrivals.len());
        let departed: BTreeSet<u32> = departures.iter().map(|d| d.0).collect();
        prop_assert_eq!(departed.len(), departures.len(), "no packet departs twice");
        prop_assert!(departed.is_disjoint(&dropped));
        if mode == TraceMode::Loop {
            prop_assert_eq!(still_inside, 0, "a looping link drains");
        }

        // FIFO, non-decreasing times, each an opportunity after the arrival.
        let opportunity_set: BTreeSet<u64> = opportunities_ns.iter().copied().collect();
        for pair in departures.windows(2) {
            prop_assert!(pair[0].0 < pair[1].0 && pair[0].2 <= pair[1].2);
        }
        for &(_, enqueued_at, departed_at) in &departures {
            prop_assert!(departed_at > enqueued_at);
            prop_assert!(opportunity_set.contains(&departed_at.as_ns()));
        }

        // Accounting: every opportunity up to the horizon is either used or wasted.
        let stats = link.stats();
        prop_assert_eq!(stats.opportunities, opportunities_ns.len() as u64);
        if still_inside == 0 {
            prop_assert_eq!(stats.opportunities * OPPORTUNITY, stats.wasted_bytes + stats.charged_bytes_departed);
        }
        prop_assert_eq!(link.capacity_bytes(Time::ZERO, horizon + Dur(1)), opportunities_ns.len() as u64 * OPPORTUNITY);
    }

    #[test]
    fn capacity_counts_opportunities_in_half_open_windows(
        ts in trace_strategy(),
        once in any::<bool>(),
        from_us in 0u64..200_000,
        len_us in 0u64..200_000,
    ) {
        let mode = if once { TraceMode::Once } else { TraceMode::Loop };
        let trace = Arc::new(Trace::from_timestamps(ts, "random").unwrap());
        let (from, to) = (Time::from_us(from_us), Time::from_us(from_us + len_us));
        let count = trace
            .opportunity_times_ms(mode, to.as_ms() + 1)
            .iter()
            .filter(|&&ms| (from.as_ns()..to.as_ns()).contains(&(ms * 1_000_000)))
            .count() as u64;
        let link: Link<u32> = Link::new(LinkService::trace(trace, mode), QueueSpec::Infinite);
        prop_assert_eq!(link.capacity_bytes(from, to), count * OPPORTUNITY);
    }

    #[test]
    fn constant_link_is_a_fifo_serialiser(
        rate_kbps in 100u64..100_000,
        spec in queue_strategy(),
        arrivals in arrivals_strategy(),
    ) {
        let rate = Bandwidth::from_bps(rate_kbps * 1000);
        let mut link: Link<u32> = Link::new(LinkService::constant(rate), spec);
        let mut sizes = vec![];
        let mut now = Time::ZERO;
        let mut dropped = 0usize;
        for (id, &(gap_us, ip_len, _)) in arrivals.iter().enumerate() {
            now += Dur::from_us(gap_us);
            sizes.push(ip_len);
            if let EnqueueResult::Dropped(_) = link.enqueue(now, id as u32, ip_len) {
                dropped += 1;
            }
        }
        link.advance(Time::MAX);
        dropped += std::iter::from_fn(|| link.pop_drop()).count();
        let departures: Vec<_> = std::iter::from_fn(|| link.pop_departure()).collect();
        prop_assert_eq!(departures.len() + dropped, arrivals.len());
        let mut previous = Time::ZERO;
        for pair in departures.windows(2) {
            prop_assert!(pair[0].item < pair[1].item);
        }
        for d in &departures {
            // Service starts at max(arrival, previous departure) and lasts the exact
            // transmission time, within the 1 ns of rounding.
            let start = d.enqueued_at.max(previous);
            let exact_ns = u128::from(sizes[d.item as usize]) * 8 * 1_000_000_000 / u128::from(rate.bits_per_sec);
            let took = u128::from((d.departed_at - start).as_ns());
            prop_assert!(took + 1 >= exact_ns && took <= exact_ns + 1, "took {} ns for {} ns", took, exact_ns);
            previous = d.departed_at;
        }
    }
}
