//! Sender stories: slow start, fast recovery with PRR, RACK, TLP, RTO, undo, pacing.

use super::*;

// ----- (1) slow start ---------------------------------------------------------------------

/// The 100 Mbit/s, 40 ms RTT loopback (BDP ≈ 333 packets, so the first rounds never
/// queue) with a Reno sender and a receiver configured as `rcv`.
fn slow_start_net(rcv: &ReceiverConfig) -> Net {
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
    let mut net = Net::new(sender, Bandwidth::from_mbps(100.0), Dur::from_ms(20), None);
    net.receiver = TcpReceiver::new(0, rcv, Time::ZERO);
    net
}

#[test]
fn slow_start_doubles_cwnd_each_round_trip_with_delayed_acks() {
    // Round k is sent around 40k ms and ACKed around 40(k+1) ms. With a receive buffer
    // large enough never to bind, cwnd doubles each round exactly.
    let unbounded = ReceiverConfig {
        rmem: [4096, 64 << 20, 64 << 20],
        ..ReceiverConfig::default()
    };
    let mut net = slow_start_net(&unbounded);
    for (k, cwnd) in [10, 20, 40, 80, 160].into_iter().enumerate() {
        net.run_until(ms(20 + 40 * k as u64));
        assert_eq!(net.sender.sock().cwnd, cwnd, "cwnd after {k} round trips");
    }
    // With Linux's default tcp_rmem (131072 initial) the window autotuning has seen too
    // few round trips by round 3 and holds one segment of it back for a moment, so
    // round 4 ends one short.
    let mut net = slow_start_net(&ReceiverConfig::default());
    for (k, cwnd) in [10, 20, 40, 80, 159].into_iter().enumerate() {
        net.run_until(ms(20 + 40 * k as u64));
        assert_eq!(net.sender.sock().cwnd, cwnd, "cwnd after {k} round trips");
    }
    // By 155 ms the receiver got rounds 0..3 = 150 segments. Besides the 16 quick ACKs
    // of the start, every segment that grows the window (`tcp_grow_window`, while
    // rcv_ssthresh is below the autotuned clamp) asks for a quick ACK, so most segments
    // of slow start are ACKed on their own: 131 ACKs. Linux through the emulator on the
    // same path (kernel Reno, 100 Mbit/s, 20 ms each way) sent 130, 132 and 133 ACKs for
    // its first 150 segments in three runs (a model without the window sends 83,
    // 16 + (150 − 16)/2; one with the clamp of Linux before 6.16, `2·copied + 16·advmss`,
    // sent 143).
    let mut net2 = slow_start_net(&ReceiverConfig::default());
    net2.run_until(ms(155));
    assert_eq!(net2.receiver.stats().segments_received, 150);
    assert_eq!(net2.receiver.stats().acks_sent, 131, "ACKs sent by 155 ms");
    assert_eq!(net2.receiver.stats().delayed_acks, 0);
    assert_eq!(net2.sender.stats().retransmissions, 0);
}

// ----- (2) one lost segment: fast retransmit, PRR, exit at high_seq -----------------------

fn single_loss(rack: bool) {
    let cfg = SenderConfig {
        rack,
        ..SenderConfig::default()
    };
    let (sender, events) = reno_sender(&cfg, App::Bulk);
    // 10 Mbit/s (1.2 ms per packet), 40 ms RTT, deep queue: the loss hits slow start.
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    let mut dropped = false;
    net.drop_data = Box::new(move |_, seg| {
        if seg.seq == 60 && !dropped {
            dropped = true;
            return true;
        }
        false
    });
    net.run_until(ms(1500));
    let st = net.sender.stats().clone();
    assert_eq!(st.fast_recoveries, 1);
    assert_eq!(st.retransmissions, 1);
    assert_eq!((st.rtos, st.tlps), (0, 0));
    assert_eq!(net.obs.retransmits.len(), 1);
    let (t_rexmit, seq) = net.obs.retransmits[0];
    assert_eq!(seq, 60);

    // Fast retransmit on the ACK that brought the third SACKed segment (dupthresh), which
    // also entered Recovery.
    let entry = net.entered(CaState::Recovery);
    assert_eq!(entry.0, t_rexmit);
    let before = *net.trace.iter().rev().find(|s| s.t < entry.0).unwrap();
    let at_entry = net.snap_at(entry.0);
    assert_eq!(at_entry.sacked_out, 3, "dupthresh: 3 segments SACKed");
    assert_eq!(
        at_entry.ssthresh,
        (before.cwnd / 2).max(2),
        "Reno halves cwnd"
    );
    let ssthresh = at_entry.ssthresh;

    // Exit when snd_una passes high_seq: cwnd = ssthresh and CompleteCwr.
    let exit = net.left(CaState::Recovery);
    assert_eq!(exit.2, CaState::Open);
    let at_exit = net.snap_at(exit.0);
    assert_eq!(at_exit.cwnd, ssthresh);
    assert!(events.lock().unwrap().contains(&CaEvent::CompleteCwr));

    // PRR: over the recovery the sender sent about ssthresh segments (one retransmission
    // plus new data), leaving in-flight at ssthresh when recovery ends; in-flight never
    // exceeded its value at entry.
    let sent_in_recovery = net
        .sent
        .iter()
        .filter(|s| s.0 >= entry.0 && s.0 < exit.0)
        .count() as i64;
    assert!(
        (sent_in_recovery - ssthresh as i64).abs() <= 2,
        "sent {sent_in_recovery} during recovery, ssthresh {ssthresh}"
    );
    assert!((at_exit.in_flight as i64 - ssthresh as i64).abs() <= 2);
    for s in net.trace.iter().filter(|s| s.t >= entry.0 && s.t < exit.0) {
        assert!(s.in_flight <= at_entry.in_flight.max(before.in_flight));
        assert_eq!(s.state, CaState::Recovery);
    }
    // Afterwards the flow keeps going in congestion avoidance.
    assert!(net.sender.sock().snd_una > 500);
    assert_eq!(net.sender.sock().ssthresh, ssthresh);
}

#[test]
fn single_loss_fast_retransmit_prr_and_exit_with_rack() {
    single_loss(true);
}

#[test]
fn single_loss_fast_retransmit_prr_and_exit_with_dupthresh() {
    single_loss(false);
}

#[test]
fn rack_detects_a_lost_retransmission_without_a_timeout() {
    let run = |rack: bool| {
        let cfg = SenderConfig {
            rack,
            ..SenderConfig::default()
        };
        let (sender, _) = reno_sender(&cfg, App::Bulk);
        let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
        // Segment 60 is lost twice: the original and the first retransmission.
        let mut copies = 0;
        net.drop_data = Box::new(move |_, seg| {
            if seg.seq == 60 {
                copies += 1;
                return copies <= 2;
            }
            false
        });
        net.run_until(ms(3000));
        let rexmits: Vec<u64> = net.obs.retransmits.iter().map(|r| r.1).collect();
        (net.sender.stats().clone(), rexmits)
    };
    let (st, rexmits) = run(true);
    assert_eq!(rexmits, vec![60, 60]);
    assert_eq!((st.rtos, st.fast_recoveries), (0, 1), "{st:?}");
    // Without RACK only the retransmission timer finds the second loss.
    let (st, rexmits) = run(false);
    assert_eq!(rexmits, vec![60, 60]);
    assert_eq!(st.rtos, 1, "{st:?}");
}

// ----- (3) tail loss: TLP -------------------------------------------------------------------

#[test]
fn tail_loss_is_repaired_by_a_probe_at_two_srtt_without_rto() {
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bytes(30 * 1448));
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    // Lose the first transmission of the last three segments.
    net.drop_data = Box::new(|_, seg| seg.seq >= 27 && !seg.retransmit);
    let done = net.run_to_completion(ms(10_000));
    let st = net.sender.stats().clone();
    assert_eq!((st.tlps, st.rtos), (1, 0));
    assert_eq!(net.receiver.delivered_bytes(), 30 * 1448);
    // The probe retransmits the highest segment; RACK then finds 27 and 28 lost.
    let probe = net.obs.retransmits[0];
    assert_eq!(probe.1, 29);
    let rexmits: Vec<u64> = net.obs.retransmits.iter().map(|r| r.1).collect();
    assert_eq!(rexmits, vec![29, 27, 28]);
    // PTO = 2·srtt + 2 ms from the last ACK (3 packets out), in whole ticks.
    let last_ack = *net.trace.iter().rev().find(|s| s.t < probe.0).unwrap();
    let pto_us = (last_ack.srtt_us8 >> 2) + 2000;
    let pto = Dur::from_ms(pto_us.div_ceil(1000));
    assert_eq!(probe.0, last_ack.t + pto);
    assert!(done < probe.0 + Dur::from_ms(200), "completed at {done}");
}

#[test]
fn a_single_lost_tail_segment_is_probed_at_the_rto_bound() {
    // One packet out: PTO = 2·srtt + rto_min, capped at the RTO, which is sooner here.
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bytes(30 * 1448));
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    net.drop_data = Box::new(|_, seg| seg.seq == 29 && !seg.retransmit);
    net.run_to_completion(ms(10_000));
    let st = net.sender.stats();
    assert_eq!((st.tlps, st.rtos), (1, 0));
    let probe = net.obs.retransmits[0];
    let last_ack = *net.trace.iter().rev().find(|s| s.t < probe.0).unwrap();
    let two_srtt_plus_min = Dur::from_us((last_ack.srtt_us8 >> 2) + 200_000);
    assert_eq!(probe.0, last_ack.t + last_ack.rto.min(two_srtt_plus_min));
}

// ----- (4) blackout: RTO, backoff, cwnd 1, slow start ---------------------------------------

#[test]
fn blackout_times_out_backs_off_and_restarts_in_slow_start() {
    // cwnd clamped at 20 (below the 33-packet BDP): no loss before the blackout.
    let mut net = clamped_reno_net();
    let blackout = |t: Time| t >= ms(2000) && t < ms(5000);
    net.drop_data = Box::new(move |t, _| blackout(t));
    net.drop_ack = Box::new(move |t, _| blackout(t));
    net.run_until(ms(1999));
    let before = net.trace.last().copied().unwrap();
    assert_eq!(before.cwnd, 20);
    assert_eq!(before.state, CaState::Open);
    let rto0 = net.sender.rto();
    // RTO = srtt + max(4·mdev, rto_min), rounded up to a tick.
    let est = net.sender.rtt_estimator();
    let expect = Dur::from_ms((est.srtt_us() + est.rttvar_us()).div_ceil(1000));
    assert_eq!(rto0, expect);
    assert!(rto0 >= Dur::from_us(est.srtt_us()) + Dur::from_ms(200));

    net.run_until(ms(8000));
    let rtos = net.obs.rtos.clone();
    assert!(rtos.len() >= 4, "rtos at {rtos:?}");
    // First: a probe went out PTO after the last ACK; the RTO fires rto0 after it.
    assert_eq!(net.sender.stats().tlps, 1);
    let probe_sent = net
        .sent
        .iter()
        .rev()
        .find(|s| s.0 < rtos[0])
        .map(|s| s.0)
        .unwrap();
    assert_eq!(rtos[0], probe_sent + rto0);
    // Backoff doubles the interval each time.
    for w in rtos.windows(2).take(3).enumerate() {
        let (i, pair) = w;
        assert_eq!(pair[1] - pair[0], rto0 * (2 << i), "interval after RTO {i}");
    }
    // After the first RTO: Loss, everything lost, cwnd = 1, ssthresh halved once.
    let after = net.snap_at(rtos[0]);
    assert_eq!(after.state, CaState::Loss);
    assert_eq!(after.cwnd, 1);
    assert_eq!(after.ssthresh, 10);
    assert_eq!(
        net.snap_at(rtos[3]).ssthresh,
        10,
        "not halved again in the same episode"
    );
    // The first ACK after the blackout restarts slow start from 1.
    let first_ack_after = net
        .trace
        .iter()
        .find(|s| s.t > ms(5000) && s.snd_una > before.snd_una);
    let first = first_ack_after.expect("ACKs after the blackout");
    assert!(first.cwnd <= 2);
    let later = net.snap_at(first.t + Dur::from_ms(200));
    assert!(later.cwnd >= 8, "slow start resumed: cwnd {}", later.cwnd);
    assert!(net.sender.sock().snd_una > before.snd_una + 100);
}

#[test]
fn a_delay_spike_causes_a_spurious_timeout_that_is_undone() {
    // The bottleneck stops serving for 1.5 s but loses nothing (a cellular stall): the
    // RTO fires, and the originals' ACKs, echoing timestamps older than the
    // retransmission, prove it spurious (tcp_try_undo_loss).
    let mut net = clamped_reno_net();
    net.fwd.stall = Some((ms(2000), ms(3500)));
    net.run_until(ms(1999));
    let before = net.trace.last().copied().unwrap();
    net.run_until(ms(6000));
    let st = net.sender.stats().clone();
    assert!(st.rtos >= 1);
    assert_eq!(st.undo_loss + st.undo_frto, 1, "{st:?}");
    // Undo restored the window and the threshold from before the timeout.
    let undo_t = net.left(CaState::Loss).0;
    let after = net.snap_at(undo_t);
    assert_eq!(after.state, CaState::Open);
    assert_eq!(after.cwnd, before.cwnd);
    assert_eq!(
        net.sender.sock().ssthresh,
        cellcc_congestion::INFINITE_SSTHRESH
    );
    assert!(
        net.receiver.stats().duplicates >= 1,
        "the retransmission was a duplicate"
    );
}

/// Owns cwnd (fixed) and asks for pacing at a fixed rate, like BBR does.
#[derive(Debug)]
struct PacedFixed {
    cwnd: u32,
    rate: u64,
    /// `min_tso_segs` (`None`: the sysctl's 2).
    min_tso: Option<u32>,
}

impl CongestionControl for PacedFixed {
    fn name(&self) -> &'static str {
        "paced"
    }
    fn init(&mut self, sock: &mut Sock) {
        sock.cwnd = self.cwnd;
        sock.pacing_status = cellcc_congestion::PacingStatus::Needed;
        sock.pacing_rate = self.rate;
    }
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }
    fn owns_cwnd(&self) -> bool {
        true
    }
    fn cong_control(&mut self, sock: &mut Sock, _rs: &RateSample) {
        sock.cwnd = self.cwnd;
    }
    fn min_tso_segs(&self, _sock: &Sock) -> Option<u32> {
        self.min_tso
    }
}

#[test]
fn pacing_spaces_segments_only_when_the_cc_asks() {
    // 1448 bytes per ms; the first 10 segments go out unpaced, then one per ms (with
    // single-segment TSO bursts, as BBR below 1.2 Mbit/s asks for).
    let cc = PacedFixed {
        cwnd: 100,
        rate: 1_448_000,
        min_tso: Some(1),
    };
    let sender = sender_with(cc, App::Bulk);
    assert_eq!(sender.next_wakeup(), None);
    let mut net = Net::new(sender, Bandwidth::from_mbps(100.0), Dur::from_ms(20), None);
    assert_eq!(net.sent.len(), 10);
    assert_eq!(net.sender.next_wakeup(), Some(ms(1)), "pacing release time");
    net.run_until(ms(30));
    let times: Vec<Time> = net.sent.iter().map(|s| s.0).collect();
    assert!(times[..10].iter().all(|&t| t == Time::ZERO));
    for (k, &t) in times[10..].iter().enumerate() {
        assert_eq!(t, ms(k as u64 + 1));
    }
    assert_eq!(times.len(), 10 + 30);
    // Without pacing (Reno), the initial window goes out at once and nothing waits.
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
    let net = Net::new(sender, Bandwidth::from_mbps(100.0), Dur::from_ms(20), None);
    assert_eq!(net.sent.len(), 10);
    assert!(
        net.sender.next_wakeup() > Some(ms(100)),
        "only the probe timer"
    );
}

#[test]
fn paced_segments_leave_in_tso_bursts_of_tcp_tso_segs() {
    // 1448 bytes per ms is under one segment per ms of data, so tcp_tso_segs is the
    // sysctl's minimum, 2: a burst of two segments every 2 ms, as the kernel's GSO
    // packets reach the emulator's link (half of BBR's arrivals share a millisecond
    // with the one before on TMobile-UMTS-driving).
    let cc = PacedFixed {
        cwnd: 100,
        rate: 1_448_000,
        min_tso: None,
    };
    let mut net = Net::new(
        sender_with(cc, App::Bulk),
        Bandwidth::from_mbps(100.0),
        Dur::from_ms(20),
        None,
    );
    net.run_until(ms(30));
    let times: Vec<Time> = net.sent.iter().map(|s| s.0).collect();
    for (k, &t) in times[10..].iter().enumerate() {
        assert_eq!(
            t,
            ms(2 * (k as u64 / 2) + 1),
            "segment {k} after the initial window"
        );
    }
    assert_eq!(times.len(), 10 + 30, "the same rate as single segments");
}

// ----- a congestion control enters CWR (tcp_enter_cwr) ------------------------------------

/// Reno that asks for one CWR reduction (as CDG's backoff does) the first time cwnd
/// reaches `at_cwnd`, with ssthresh = 70 % of cwnd.
#[derive(Debug)]
struct CwrOnce {
    at_cwnd: u32,
    requested: bool,
    events: Arc<Mutex<Vec<CaEvent>>>,
}

impl CongestionControl for CwrOnce {
    fn name(&self) -> &'static str {
        "test-cwr"
    }
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        (sock.cwnd * 7 / 10).max(2)
    }
    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        if !self.requested && sock.cwnd >= self.at_cwnd {
            self.requested = true;
            sock.cwr_request = true;
            return;
        }
        if sock.in_slow_start() {
            sock.slow_start(acked);
        }
    }
    fn cwnd_event(&mut self, _sock: &mut Sock, event: CaEvent) {
        self.events.lock().unwrap().push(event);
    }
}

#[test]
fn a_cwr_request_from_cong_avoid_reduces_cwnd_by_prr_without_retransmitting() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let cc = CwrOnce {
        at_cwnd: 40,
        requested: false,
        events: events.clone(),
    };
    let sender = sender_with(cc, App::Bulk);
    // 10 Mbit/s, 40 ms RTT, deep queue: no loss ever.
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    net.run_until(ms(1000));

    let entry = net.entered(CaState::Cwr);
    assert_eq!(entry.1, CaState::Open);
    let at_entry = net.snap_at(entry.0);
    let before = *net.trace.iter().rev().find(|s| s.t < entry.0).unwrap();
    // tcp_init_cwnd_reduction: ssthresh from the congestion control at the entry cwnd.
    assert!(before.cwnd >= 40);
    assert_eq!(at_entry.ssthresh, before.cwnd * 7 / 10);
    // The flag was consumed.
    assert!(!net.sender.sock().cwr_request);

    // CWR lasts until data sent after the entry is acked; PRR lowers cwnd meanwhile and
    // the exit sets cwnd = ssthresh and reports CompleteCwr.
    let exit = net.left(CaState::Cwr);
    assert_eq!(exit.2, CaState::Open);
    assert!(exit.0 > entry.0);
    let at_exit = net.snap_at(exit.0);
    assert_eq!(at_exit.cwnd, at_entry.ssthresh);
    for s in net.trace.iter().filter(|s| s.t >= entry.0 && s.t < exit.0) {
        assert_eq!(s.state, CaState::Cwr);
        assert!(s.cwnd <= before.cwnd);
    }
    assert_eq!(
        events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| **e == CaEvent::CompleteCwr)
            .count(),
        1
    );
    // A reduction without loss: nothing retransmitted, no recovery, no undo.
    let st = net.sender.stats();
    assert_eq!((st.retransmissions, st.fast_recoveries, st.rtos), (0, 0, 0));
    assert_eq!(net.sender.sock().cwnd, at_entry.ssthresh);
}
