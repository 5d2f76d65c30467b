//! Receiver stories: quick-ACKs, delayed ACKs, SACK blocks, D-SACK, timestamps.

use super::*;

// ----- (5) receiver ---------------------------------------------------------------------------

fn seg(seq: u64, tsval: u32) -> DataSegment {
    DataSegment {
        flow: 0,
        seq,
        len: 1448,
        tsval,
        tsecr: 0,
        sent_at: Time::ZERO,
        retransmit: false,
        syn: false,
    }
}

fn blocks(a: &AckSegment) -> Vec<(u64, u64)> {
    a.sack_blocks().iter().map(|b| (b.start, b.end)).collect()
}

#[test]
fn receiver_quick_acks_then_every_second_segment() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    // The window grows over the first six segments (rcv_ssthresh 65160 → 81920 bytes,
    // 2·advmss each) and every growth adds a quick ACK (`tcp_grow_window`:
    // `icsk_ack.quick |= 1`): 16 + 6 quick ACKs.
    for s in 0..22 {
        let out = r.on_data(ms(s), &seg(s, s as u32));
        assert!(out.ack.is_some(), "quick ACK {s}");
        assert_eq!(out.delivered_bytes, 1448);
    }
    // Quick-ACK budget spent: ACK every second full-sized segment.
    assert!(r.on_data(ms(22), &seg(22, 22)).ack.is_none());
    assert_eq!(r.next_wakeup(), Some(ms(22) + Dur::from_ms(40)));
    let a = r.on_data(ms(23), &seg(23, 23)).ack.expect("second segment");
    assert_eq!(a.ack, 24);
    assert_eq!(r.next_wakeup(), None);
    assert!(r.on_data(ms(24), &seg(24, 24)).ack.is_none());
    assert!(r.on_data(ms(25), &seg(25, 25)).ack.is_some());
}

#[test]
fn receiver_with_quickack_always_acks_every_segment() {
    // A route with `quickack 1`: past the quick-ACK budget (capped by the receive
    // window, so a huge `quickack` alone no longer means "always") every segment is
    // still ACKed at once.
    let cfg = ReceiverConfig {
        quickack_always: true,
        max_quickacks: 100_000_000,
        ..ReceiverConfig::default()
    };
    let mut r = TcpReceiver::new(0, &cfg, Time::ZERO);
    for s in 0..200 {
        assert!(
            r.on_data(ms(s), &seg(s, s as u32)).ack.is_some(),
            "segment {s}"
        );
    }
    assert_eq!(r.next_wakeup(), None);
    let mut capped = TcpReceiver::new(
        0,
        &ReceiverConfig {
            quickack_always: false,
            ..cfg
        },
        Time::ZERO,
    );
    let acks = (0..200)
        .filter(|&s| capped.on_data(ms(s), &seg(s, s as u32)).ack.is_some())
        .count();
    assert!(
        acks < 150,
        "the window caps the quick-ACK budget: {acks} ACKs"
    );
}

#[test]
fn receiver_delays_a_lone_segment_by_40ms() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    // 22 quick ACKs (16, and 6 for the window's growth).
    for s in 0..22 {
        r.on_data(ms(s), &seg(s, 7));
    }
    // A lone segment after a 100 ms pause (ato stays at 40 ms: 100 ms > ato).
    assert!(r.on_data(ms(121), &seg(22, 121)).ack.is_none());
    assert_eq!(r.next_wakeup(), Some(ms(161)));
    assert_eq!(r.on_timer(ms(160)), None);
    let a = r.on_timer(ms(161)).expect("delayed ACK");
    assert_eq!((a.ack, a.tsecr, a.sack_len), (23, 121, 0));
    assert_eq!(r.stats().delayed_acks, 1);
    assert_eq!(r.next_wakeup(), None);
}

#[test]
fn receiver_sack_blocks_are_most_recent_first() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    let mut t = 0;
    let mut feed = |r: &mut TcpReceiver, s: u64| {
        t += 1;
        r.on_data(ms(t), &seg(s, t as u32))
    };
    feed(&mut r, 0);
    feed(&mut r, 1);
    let a = feed(&mut r, 3).ack.unwrap();
    assert_eq!((a.ack, blocks(&a)), (2, vec![(3, 4)]));
    let a = feed(&mut r, 5).ack.unwrap();
    assert_eq!(blocks(&a), vec![(5, 6), (3, 4)]);
    let a = feed(&mut r, 7).ack.unwrap();
    assert_eq!(blocks(&a), vec![(7, 8), (5, 6), (3, 4)]);
    // 4 joins 3 and 5: the merged block comes first.
    let a = feed(&mut r, 4).ack.unwrap();
    assert_eq!(blocks(&a), vec![(3, 6), (7, 8)]);
    let a = feed(&mut r, 9).ack.unwrap();
    assert_eq!(blocks(&a), vec![(9, 10), (3, 6), (7, 8)]);
    let a = feed(&mut r, 11).ack.unwrap();
    assert_eq!(
        blocks(&a),
        vec![(11, 12), (9, 10), (3, 6)],
        "at most 3 blocks"
    );
    // Filling the first hole delivers 2..6 and ACKs at once.
    let out = feed(&mut r, 2);
    let a = out.ack.expect("gap-filling data is ACKed at once");
    assert_eq!(out.delivered_bytes, 4 * 1448);
    assert_eq!((a.ack, blocks(&a)), (6, vec![(11, 12), (9, 10), (7, 8)]));
    assert_eq!(r.stats().out_of_order, 6);
}

#[test]
fn receiver_dsacks_duplicates() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    for s in [0, 1, 2, 4, 5] {
        r.on_data(ms(s), &seg(s, s as u32));
    }
    // Below the cumulative ACK.
    let out = r.on_data(ms(10), &seg(1, 10));
    assert!(out.duplicate);
    assert_eq!(out.delivered_bytes, 0);
    let a = out.ack.unwrap();
    assert!(a.dsack);
    assert_eq!((a.ack, blocks(&a)), (3, vec![(1, 2), (4, 6)]));
    // Inside an out-of-order block: D-SACK, then the enclosing block.
    let a = r.on_data(ms(11), &seg(5, 11)).ack.unwrap();
    assert!(a.dsack);
    assert_eq!(blocks(&a), vec![(5, 6), (4, 6)]);
    assert_eq!(r.stats().duplicates, 2);
    assert_eq!(r.delivered_bytes(), 3 * 1448);
}

#[test]
fn receiver_echoes_the_timestamp_of_the_earliest_unacked_segment() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    // 22 quick ACKs (16, and 6 for the window's growth).
    for s in 0..22 {
        r.on_data(ms(s), &seg(s, 100 + s as u32));
    }
    // ACK every two: the echo is the first segment's TSval (RFC 7323 §4.3 (2)).
    r.on_data(ms(30), &seg(22, 200));
    let a = r.on_data(ms(31), &seg(23, 201)).ack.unwrap();
    assert_eq!(a.tsecr, 200);
    // Out of order: TS.Recent does not move; the hole filler's TSval is echoed.
    let a = r.on_data(ms(32), &seg(25, 300)).ack.unwrap();
    assert_eq!(a.tsecr, 200);
    let a = r.on_data(ms(33), &seg(24, 301)).ack.unwrap();
    assert_eq!((a.ack, a.tsecr), (26, 301));
}
