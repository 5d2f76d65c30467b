//! Rate samples, RTT estimation in the loop, exactly-once delivery under loss, determinism.

use super::*;

// ----- (6) delivery-rate samples ----------------------------------------------------------------

#[test]
fn rate_samples_match_the_bottleneck_and_mark_the_app_limited_tail() {
    // 12 Mbit/s: exactly 1000 packets of 1500 bytes per second; fixed cwnd 60 keeps the
    // link busy (BDP 40 packets) with a standing queue.
    let samples = Arc::new(Mutex::new(Vec::new()));
    let cc = FixedCwnd {
        cwnd: 60,
        samples: samples.clone(),
    };
    let total = 3000u64;
    let sender = sender_with(cc, App::Bytes(total * 1448));
    let mut net = Net::new(sender, Bandwidth::from_mbps(12.0), Dur::from_ms(20), None);
    // Lose the last segment so the probe that repairs it is sent app-limited.
    net.drop_data = Box::new(move |_, seg| seg.seq == total - 1 && !seg.retransmit);
    net.run_to_completion(ms(20_000));
    let samples = samples.lock().unwrap();
    let steady: Vec<&(Time, RateSample)> = samples
        .iter()
        .filter(|(t, rs)| *t > ms(500) && *t < ms(2500) && rs.interval.is_some())
        .collect();
    assert!(steady.len() > 500);
    for (t, rs) in &steady {
        assert!(!rs.is_app_limited);
        let pps = rs.delivered as f64 / rs.interval.unwrap().as_secs_f64();
        assert!((pps / 1000.0 - 1.0).abs() < 0.02, "{pps} pkt/s at {t}");
    }
    // The tail: once all data is out, the flow is app-limited; the probe carries it.
    let tail: Vec<&(Time, RateSample)> =
        samples.iter().filter(|(_, rs)| rs.is_app_limited).collect();
    assert!(!tail.is_empty(), "no app-limited sample");
    assert!(tail.iter().all(|(t, _)| *t > ms(2900)));
    assert_eq!(net.sender.stats().tlps, 1);
}

// ----- (7) RTT estimator in the loop ------------------------------------------------------------

#[test]
fn first_rtt_sample_sets_srtt_and_rto() {
    // An unloaded path: the first ACK (quick ACK of segment 0) measures
    // 40 ms + 1.2 ms serialisation; srtt = m, RTO = m + max(2m, 200 ms) → 242 ms (ticks).
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    assert_eq!(net.sender.rto(), Dur::from_secs(1), "initial RTO");
    net.run_until(ms(42));
    let (_, m) = net.obs.rtts[0];
    assert_eq!(m, Dur::from_us(41_200));
    assert_eq!(net.sender.sock().srtt, m);
    assert_eq!(net.sender.rto(), Dur::from_ms(242));
    assert_eq!(net.sender.sock().min_rtt, m);
}

// ----- (8) every byte delivered exactly once, in order, under random loss ---------------------

/// xorshift64* for the lossy channel.
struct Rng(u64);
impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn lossy_transfer(
    bytes: u64,
    p_data: f64,
    p_ack: f64,
    seed: u64,
    rack: bool,
    limit: Option<usize>,
) -> SenderStats {
    let cfg = SenderConfig {
        rack,
        ..SenderConfig::default()
    };
    let (sender, _) = reno_sender(&cfg, App::Bytes(bytes));
    let mut net = Net::new(sender, Bandwidth::from_mbps(8.0), Dur::from_ms(15), limit);
    let mut rng = Rng(seed | 1);
    net.drop_data = Box::new(move |_, _| rng.next_f64() < p_data);
    let mut rng = Rng((seed ^ 0x9e37_79b9_7f4a_7c15) | 1);
    net.drop_ack = Box::new(move |_, _| rng.next_f64() < p_ack);
    net.run_to_completion(Time::from_secs(100_000));
    assert_eq!(net.receiver.delivered_bytes(), bytes);
    assert_eq!(net.delivered, bytes);
    assert_eq!(net.deliveries.iter().map(|d| d.1).sum::<u64>(), bytes);
    let s = net.sender.sock();
    assert_eq!(s.snd_una, bytes.div_ceil(1448));
    assert_eq!(
        (s.packets_out, s.sacked_out, s.lost_out, s.retrans_out),
        (0, 0, 0, 0)
    );
    assert_eq!(net.sender.stats().bytes_acked, bytes);
    assert_eq!(
        net.sender.next_wakeup(),
        None,
        "no timer left after completion"
    );
    net.sender.stats().clone()
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn every_byte_is_delivered_exactly_once_in_order(
        bytes in 1u64..400_000,
        p_data in 0.0f64..0.25,
        p_ack in 0.0f64..0.25,
        seed in any::<u64>(),
        rack in any::<bool>(),
        queue in prop_oneof![Just(None), (5usize..60).prop_map(Some)],
    ) {
        lossy_transfer(bytes, p_data, p_ack, seed, rack, queue);
    }
}

#[test]
fn heavy_loss_transfer_completes() {
    let st = lossy_transfer(1_000_000, 0.3, 0.3, 42, true, Some(20));
    assert!(st.rtos > 0 && st.retransmissions > 200, "{st:?}");
    lossy_transfer(1_000_000, 0.3, 0.3, 43, false, Some(20));
}

#[test]
fn runs_are_deterministic() {
    let run = || {
        let (sender, _) = reno_sender(&SenderConfig::default(), App::Bytes(500_000));
        let mut net = Net::new(
            sender,
            Bandwidth::from_mbps(8.0),
            Dur::from_ms(15),
            Some(30),
        );
        let t = net.run_to_completion(Time::from_secs(1000));
        (t, net.sender.stats().clone(), net.receiver.stats().clone())
    };
    assert_eq!(run(), run());
}

// ----- performance smoke test (run with --release --ignored) ------------------------------------

#[test]
#[ignore]
fn perf_long_bulk_flow() {
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
    let mut net = Net::new(
        sender,
        Bandwidth::from_mbps(16.7),
        Dur::from_ms(20),
        Some(2000),
    );
    let start = std::time::Instant::now();
    net.run_until(Time::from_secs(140));
    let el = start.elapsed();
    let st = net.sender.stats();
    eprintln!(
        "140 s: {} segments, {} ACKs, {} rexmits, {} recoveries, {} rtos in {:?}",
        st.segments_sent, st.acks_received, st.retransmissions, st.fast_recoveries, st.rtos, el
    );
}

#[test]
#[ignore]
fn stress_many_lossy_transfers() {
    let mut r = Rng(12345);
    let (mut segs, mut rtos, mut undos) = (0, 0, 0);
    for i in 0..3000u64 {
        let bytes = 1 + (r.next_f64() * 600_000.0) as u64;
        let pd = r.next_f64() * 0.35;
        let pa = r.next_f64() * 0.35;
        let rack = r.next_f64() < 0.5;
        let q = if r.next_f64() < 0.5 {
            None
        } else {
            Some(3 + (r.next_f64() * 80.0) as usize)
        };
        let st = lossy_transfer(bytes, pd, pa, i * 7919 + 1, rack, q);
        segs += st.segments_sent;
        rtos += st.rtos;
        undos += st.undo_loss + st.undo_frto + st.undo_recovery + st.undo_dsack;
    }
    eprintln!("{segs} segments, {rtos} RTOs, {undos} undos");
}
