//! Hand-computed departure schedules for trace and constant-rate links.
//!
//! Sizes: a packet of IP length L is charged L + 4 bytes on a trace link; every
//! opportunity carries 1504 bytes.

mod common;

use cellcc_link::{
    DropReason, EnqueueResult, Link, LinkService, QueueSpec, TraceMode, MAHIMAHI_FRAMING_BYTES,
    OPPORTUNITY_BYTES,
};
use cellcc_units::{Bandwidth, Dur, Time};
use common::{constant_link, ms, run_until, trace_link};

const LOOP: TraceMode = TraceMode::Loop;
const ONCE: TraceMode = TraceMode::Once;

fn accept(link: &mut Link<u32>, now: Time, id: u32, ip_len: u32) {
    assert_eq!(
        link.enqueue(now, id, ip_len),
        EnqueueResult::Accepted,
        "packet {id} at {now}"
    );
}

fn rejected(link: &mut Link<u32>, now: Time, id: u32, ip_len: u32) {
    assert_eq!(
        link.enqueue(now, id, ip_len),
        EnqueueResult::Dropped(id),
        "packet {id} at {now}"
    );
}

#[test]
fn a_full_size_packets_take_one_opportunity_each() {
    let mut link = trace_link(&[1, 1, 3, 5], LOOP, QueueSpec::Infinite);
    for id in 0..3 {
        accept(&mut link, Time::ZERO, id, 1500);
    }
    assert_eq!(link.next_wakeup(), Some(Time::from_ms(1)));
    let out = run_until(&mut link, Time::from_secs(1));
    assert_eq!(ms(&out), [1, 1, 3]);
    assert_eq!(out.iter().map(|d| d.0).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(link.next_wakeup(), None, "idle");
}

#[test]
fn b_packets_span_opportunities_byte_by_byte() {
    // Charged sizes: A 604, B 1004, C 1404, D 52.
    // ts 1: A 604 done (900 left), B gets 900 (104 to go).      → A@1
    // ts 2: B 104 done (1400 left), C gets 1400 (4 to go).      → B@2
    // ts 3: C 4 done (1500 left), D 52 done; 1448 bytes wasted. → C@3, D@3
    let mut link = trace_link(&[1, 2, 3], ONCE, QueueSpec::Infinite);
    for (id, ip_len) in [(0, 600), (1, 1000), (2, 1400), (3, 48)] {
        accept(&mut link, Time::ZERO, id, ip_len);
    }
    link.advance(Time::from_ms(1));
    assert_eq!(
        link.pop_departure().map(|d| (d.item, d.departed_at)),
        Some((0, Time::from_ms(1)))
    );
    assert!(link.has_packet_in_transit(), "B is part-sent");
    assert_eq!(
        link.queued_packets(),
        2,
        "the packet in transit is not queued"
    );
    assert_eq!(link.queued_bytes(), 1404 + 52);
    let out = run_until(&mut link, Time::from_secs(1));
    assert_eq!(
        out,
        [
            (1, Time::from_ms(2)),
            (2, Time::from_ms(3)),
            (3, Time::from_ms(3))
        ]
    );
    let stats = link.stats();
    assert_eq!((stats.opportunities, stats.opportunities_used), (3, 3));
    assert_eq!(stats.wasted_bytes, 1448);
    assert_eq!(stats.charged_bytes_departed, 604 + 1004 + 1404 + 52);
    assert_eq!(stats.ip_bytes_departed, 3048);
}

#[test]
fn c_unused_bytes_of_an_opportunity_are_wasted_not_banked() {
    // Two 100-byte packets (104 charged) before the 1 ms opportunity share it ...
    let mut link = trace_link(&[1, 2], LOOP, QueueSpec::Infinite);
    accept(&mut link, Time::ZERO, 0, 100);
    accept(&mut link, Time::from_us(500), 1, 100);
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [1, 1]);

    // ... but one arriving after it cannot use its 1400 unused bytes: it waits for 2 ms.
    let mut link = trace_link(&[1, 2], LOOP, QueueSpec::Infinite);
    accept(&mut link, Time::ZERO, 0, 100);
    assert_eq!(ms(&run_until(&mut link, Time::from_ms(1))), [1]);
    accept(&mut link, Time::from_us(1500), 1, 100);
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [2]);
    assert_eq!(link.stats().wasted_bytes, 2 * (1504 - 104));
}

#[test]
fn d_looping_trace_starting_at_zero_doubles_the_wrap_opportunity() {
    // [0, 2] with period 2: opportunities at 0, 2, 2, 4, 4, 6, 6, ...
    // Packets arriving at 0 cannot use the opportunity at 0.
    let mut link = trace_link(&[0, 2], LOOP, QueueSpec::Infinite);
    for id in 0..5 {
        accept(&mut link, Time::ZERO, id, 1500);
    }
    assert_eq!(
        ms(&run_until(&mut link, Time::from_secs(1))),
        [2, 2, 4, 4, 6]
    );
    // Capacity in [0, 4 ms): opportunities at 0, 2, 2.
    assert_eq!(link.capacity_bytes(Time::ZERO, Time::from_ms(4)), 3 * 1504);
    assert_eq!(
        link.capacity_bytes(Time::ZERO, Time::from_ms(4) + Dur(1)),
        5 * 1504
    );
    assert_eq!(
        link.capacity_bytes(Time::from_ms(1), Time::from_ms(3)),
        2 * 1504
    );
}

#[test]
fn d_one_line_trace_loops_every_period() {
    let mut link = trace_link(&[5], LOOP, QueueSpec::Infinite);
    for id in 0..3 {
        accept(&mut link, Time::ZERO, id, 1500);
    }
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [5, 10, 15]);
    // Idle until 100 ms: opportunities 20..=100 are skipped in one step, and wasted.
    accept(&mut link, Time::from_ms(100), 3, 1500);
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [105]);
    let stats = link.stats();
    assert_eq!(stats.opportunities, 105 / 5);
    assert_eq!(stats.opportunities_used, 4);
    assert_eq!(stats.wasted_bytes, 17 * 1504);
}

#[test]
fn e_repeated_timestamps_are_several_opportunities_in_one_millisecond() {
    let mut link = trace_link(&[3, 3, 3, 7], LOOP, QueueSpec::Infinite);
    for id in 0..4 {
        accept(&mut link, Time::ZERO, id, 1500);
    }
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [3, 3, 3, 7]);
}

#[test]
fn f_once_trace_delivers_nothing_after_its_last_line() {
    let mut link = trace_link(&[1, 2], ONCE, QueueSpec::Infinite);
    for id in 0..3 {
        accept(&mut link, Time::ZERO, id, 1500);
    }
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [1, 2]);
    assert_eq!(link.next_wakeup(), None, "the third packet waits forever");
    link.advance(Time::from_secs(3600));
    assert!(link.pop_departure().is_none());
    assert_eq!(link.queued_packets(), 1);
    assert_eq!(
        link.capacity_bytes(Time::ZERO, Time::from_secs(3600)),
        2 * 1504
    );
    assert_eq!(link.stats().opportunities, 2);
}

#[test]
fn g_arrival_exactly_at_an_opportunity_cannot_use_it() {
    let mut at_time = trace_link(&[1, 2], LOOP, QueueSpec::Infinite);
    accept(&mut at_time, Time::from_ms(1), 0, 1500);
    assert_eq!(ms(&run_until(&mut at_time, Time::from_secs(1))), [2]);

    let mut just_before = trace_link(&[1, 2], LOOP, QueueSpec::Infinite);
    accept(&mut just_before, Time::from_ms(1) - Dur(1), 0, 1500);
    assert_eq!(ms(&run_until(&mut just_before, Time::from_secs(1))), [1]);
}

#[test]
fn h_packets_larger_than_an_opportunity_are_refused() {
    let mut link = trace_link(&[1], LOOP, QueueSpec::Infinite);
    assert_eq!(
        link.max_ip_len(),
        Some(OPPORTUNITY_BYTES - MAHIMAHI_FRAMING_BYTES)
    );
    rejected(&mut link, Time::ZERO, 0, 1501);
    rejected(&mut link, Time::ZERO, 1, u32::MAX);
    accept(&mut link, Time::ZERO, 2, 1500);
    assert_eq!(link.stats().drops_too_big, 2);
    assert_eq!(link.stats().drops_queue_full, 0);
    assert!(
        link.pop_drop().is_none(),
        "refused arrivals are handed back, not put in the outbox"
    );

    // A constant-rate link has no opportunity size.
    let mut constant = constant_link(10.0);
    assert_eq!(constant.max_ip_len(), None);
    accept(&mut constant, Time::ZERO, 0, 9000);
}

#[test]
fn i_droptail_packet_limit() {
    let mut link = trace_link(
        &[10],
        LOOP,
        QueueSpec::DropTail {
            packets: Some(2),
            bytes: None,
        },
    );
    accept(&mut link, Time::ZERO, 0, 1500);
    accept(&mut link, Time::ZERO, 1, 1500);
    rejected(&mut link, Time::ZERO, 2, 1500);
    rejected(&mut link, Time::ZERO, 3, 40);
    assert_eq!(link.stats().drops_queue_full, 2);
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [10, 20]);
}

#[test]
fn i_droptail_byte_limit_counts_charged_bytes() {
    // Limit 3000: 1504 fits, 1504 + 1504 = 3008 does not, 1504 + 1404 = 2908 does.
    let mut link = trace_link(
        &[10],
        LOOP,
        QueueSpec::DropTail {
            packets: None,
            bytes: Some(3000),
        },
    );
    accept(&mut link, Time::ZERO, 0, 1500);
    rejected(&mut link, Time::ZERO, 1, 1500);
    accept(&mut link, Time::ZERO, 2, 1400);
    assert_eq!(link.queued_bytes(), 2908);
}

#[test]
fn i_drophead_drops_the_oldest() {
    let mut link = trace_link(
        &[10],
        LOOP,
        QueueSpec::DropHead {
            packets: Some(2),
            bytes: None,
        },
    );
    for id in 0..3 {
        accept(&mut link, Time::from_ms(id as u64), id, 1500);
    }
    let drop = link.pop_drop().expect("the oldest was pushed out");
    assert_eq!(
        (drop.item, drop.reason, drop.at, drop.enqueued_at),
        (0, DropReason::HeadDrop, Time::from_ms(2), Time::ZERO)
    );
    assert!(link.pop_drop().is_none());
    assert_eq!(link.stats().drops_head, 1);
    let out = run_until(&mut link, Time::from_secs(1));
    assert_eq!(out, [(1, Time::from_ms(10)), (2, Time::from_ms(20))]);
}

#[test]
fn i_packet_in_transit_does_not_count_against_the_limit() {
    // Trace [1, 100], droptail packets=2; 1000-byte packets are charged 1004.
    // ts 1: A done (500 left), B gets 500 and stays in transit (504 to go).
    // ts 100: B 504 done (1000 left), C gets 1000 (4 to go).
    // ts 101 (cycle 1): C 4 done, D 1004 done.
    let mut link = trace_link(
        &[1, 100],
        LOOP,
        QueueSpec::DropTail {
            packets: Some(2),
            bytes: None,
        },
    );
    accept(&mut link, Time::ZERO, 0, 1000);
    accept(&mut link, Time::ZERO, 1, 1000);
    rejected(&mut link, Time::ZERO, 9, 1000);
    link.advance(Time::from_ms(2));
    assert!(link.has_packet_in_transit());
    assert_eq!(link.queued_packets(), 0);
    accept(&mut link, Time::from_ms(2), 2, 1000);
    accept(&mut link, Time::from_ms(2), 3, 1000);
    rejected(&mut link, Time::from_ms(2), 9, 1000);
    let mut out = vec![];
    while let Some(d) = link.pop_departure() {
        out.push((d.item, d.departed_at));
    }
    out.extend(run_until(&mut link, Time::from_secs(1)));
    assert_eq!(
        out,
        [
            (0, Time::from_ms(1)),
            (1, Time::from_ms(100)),
            (2, Time::from_ms(101)),
            (3, Time::from_ms(101))
        ]
    );
}

#[test]
fn late_advance_keeps_opportunity_times() {
    let mut link = trace_link(&[1, 2, 3], LOOP, QueueSpec::Infinite);
    for id in 0..3 {
        accept(&mut link, Time::ZERO, id, 1500);
    }
    link.advance(Time::from_ms(100));
    let times: Vec<u64> = std::iter::from_fn(|| link.pop_departure())
        .map(|d| d.departed_at.as_ms())
        .collect();
    assert_eq!(times, [1, 2, 3]);
}

#[test]
fn j_constant_rate_serialises_back_to_back_and_restarts_after_idle() {
    // 1500 bytes at 12 Mbit/s = 12000 bits / 12e6 bit/s = 1 ms.
    let mut link = constant_link(12.0);
    for id in 0..3 {
        accept(&mut link, Time::ZERO, id, 1500);
    }
    assert_eq!(link.queued_packets(), 2, "the first is being sent");
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [1, 2, 3]);
    // Idle from 3 ms; service restarts at the arrival.
    accept(&mut link, Time::from_ms(10), 3, 1500);
    accept(&mut link, Time::from_us(10_500), 4, 1500);
    assert_eq!(ms(&run_until(&mut link, Time::from_secs(1))), [11, 12]);
    assert_eq!(link.capacity_bytes(Time::ZERO, Time::from_ms(10)), 15_000);
    assert_eq!(link.stats().opportunities, 0);
}

#[test]
fn j_constant_rate_has_no_drift_and_charges_framing() {
    // 1000 bytes at 7 Mbit/s = 8000/7 µs, not a whole number of ns. The n-th departure
    // of a busy period starting at 0 is at ceil(n × 8000 × 1e9 / 7e6) ns.
    let mut link: Link<u32> = Link::new(
        LinkService::constant(Bandwidth::from_bps(7_000_000)),
        QueueSpec::Infinite,
    );
    for id in 0..7000 {
        accept(&mut link, Time::ZERO, id, 1000);
    }
    let out = run_until(&mut link, Time::from_secs(10));
    for (n, &(_, t)) in out.iter().enumerate() {
        let bits = (n as u128 + 1) * 8000;
        assert_eq!(
            u128::from(t.as_ns()),
            (bits * 1_000_000_000).div_ceil(7_000_000)
        );
    }
    assert_eq!(out.last().unwrap().1, Time::from_secs(8));

    // With 4 framing bytes, a 1496-byte packet is charged 1500: 1 ms at 12 Mbit/s.
    let service = LinkService::Constant {
        rate: Bandwidth::from_mbps(12.0),
        framing_bytes: 4,
    };
    let mut framed: Link<u32> = Link::new(service, QueueSpec::Infinite);
    accept(&mut framed, Time::ZERO, 0, 1496);
    assert_eq!(ms(&run_until(&mut framed, Time::from_secs(1))), [1]);
}

#[test]
fn invalid_configurations_are_errors() {
    let zero = LinkService::constant(Bandwidth::ZERO);
    assert!(Link::<u32>::try_new(zero, QueueSpec::Infinite)
        .unwrap_err()
        .to_string()
        .contains("0 bit/s"));
    let no_limit = QueueSpec::DropTail {
        packets: None,
        bytes: None,
    };
    let err = Link::<u32>::try_new(LinkService::constant(Bandwidth::from_mbps(1.0)), no_limit)
        .unwrap_err();
    assert!(
        err.to_string().contains("droptail queue needs a limit"),
        "{err}"
    );
}
