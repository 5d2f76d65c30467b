//! The handshake's state machines (`tcp/handshake.rs`) and the sender they start.

use super::*;
use crate::packet::{HEADER_BYTES, SYN_OPTION_BYTES};
use crate::tcp::handshake::{Acceptor, Connector, Established, SYN_RETRIES};

const G: Dur = Dur::from_ms(1);

fn connector() -> Connector {
    Connector::new(0, G, Dur::from_secs(120))
}

/// The SYN-ACK an acceptor sends at `now` for `syn`.
fn syn_ack_for(syn: &DataSegment, now: Time) -> AckSegment {
    let mut a = Acceptor::new(0, G);
    a.on_syn(now, syn);
    a.poll_syn_ack(now, 64_240)
        .expect("a first SYN gets a SYN-ACK")
}

#[test]
fn syn_and_syn_ack_are_60_byte_datagrams_and_the_third_segment_52() {
    let mut c = connector();
    let syn = c.poll_transmit(ms(0)).unwrap();
    assert!(syn.syn && syn.is_control());
    assert_eq!(syn.ip_len(), 60);
    assert_eq!(HEADER_BYTES + SYN_OPTION_BYTES, 60);
    let sa = syn_ack_for(&syn, ms(30));
    assert!(sa.syn);
    assert_eq!(sa.ip_len(), 60);
    assert!(c.on_syn_ack(ms(60), &sa).is_some());
    let ack = c.poll_transmit(ms(60)).unwrap();
    assert!(!ack.syn && ack.is_control());
    assert_eq!(ack.ip_len(), 52);
    assert_eq!(ack.tsecr, sa.tsval, "the ACK echoes the SYN-ACK's TSval");
    assert!(c.poll_transmit(ms(60)).is_none());
}

#[test]
fn syn_timeouts_are_linear_four_times_then_double_and_give_up_after_six() {
    let mut c = connector();
    let mut sent = vec![];
    let mut now = ms(0);
    for _ in 0..20 {
        while let Some(s) = c.poll_transmit(now) {
            assert!(s.syn);
            assert_eq!(s.retransmit, !sent.is_empty());
            sent.push(now.as_ms());
        }
        let Some(t) = c.next_wakeup() else { break };
        now = t;
        c.on_timer(now);
    }
    // tcp_syn_linear_timeouts = 4: 1, 1, 1, 1, 1 s, then 2, 4 s; after the sixth
    // retransmission the next expiry (4 s later) abandons the connection.
    assert_eq!(sent, vec![0, 1000, 2000, 3000, 4000, 5000, 7000]);
    assert_eq!(c.syn_retransmits(), SYN_RETRIES);
    assert!(c.has_failed());
    assert_eq!(now, ms(11_000));
}

#[test]
fn handshake_rtt_is_timed_from_the_syn_unless_it_was_sent_again() {
    // Sent once: from the SYN's send time.
    let mut c = connector();
    let syn = c.poll_transmit(ms(6)).unwrap();
    let hs = c.on_syn_ack(ms(87), &syn_ack_for(&syn, ms(40))).unwrap();
    assert_eq!(hs.rtt, Dur::from_ms(81));
    assert_eq!(hs.syn_retransmits, 0);
    // Sent twice, the SYN-ACK answering the first: Karn's rule rules out the send time,
    // and the timestamp echo of the first SYN gives the whole wait (Verizon-EVDO-driving:
    // SYN at 6 ms, again at 1006 ms, SYN-ACK at 1076 ms, the kernel's srtt 1.07 s).
    let mut c = connector();
    let first = c.poll_transmit(ms(6)).unwrap();
    c.on_timer(ms(1006));
    let again = c.poll_transmit(ms(1006)).unwrap();
    assert!(again.retransmit);
    let hs = c
        .on_syn_ack(ms(1076), &syn_ack_for(&first, ms(94)))
        .unwrap();
    assert_eq!(hs.rtt, Dur::from_ms(1070));
    assert_eq!(hs.syn_retransmits, 1);
    assert_eq!(hs.snd_wnd, 64_240);
    assert!(c.next_wakeup().is_none(), "the SYN timer stops");
}

#[test]
fn a_second_syn_ack_gets_one_challenge_ack_per_half_second() {
    let mut c = connector();
    let syn = c.poll_transmit(ms(0)).unwrap();
    let sa = syn_ack_for(&syn, ms(10));
    assert!(c.on_syn_ack(ms(20), &sa).is_some());
    assert!(c.poll_transmit(ms(20)).is_some());
    assert!(c.on_syn_ack(ms(20), &sa).is_none());
    assert!(
        c.poll_transmit(ms(20)).is_some(),
        "the first stray SYN-ACK is answered"
    );
    assert!(c.on_syn_ack(ms(400), &sa).is_none());
    assert!(
        c.poll_transmit(ms(400)).is_none(),
        "within 500 ms of the last answer"
    );
    assert!(c.on_syn_ack(ms(520), &sa).is_none());
    assert!(c.poll_transmit(ms(520)).is_some());
}

#[test]
fn acceptor_answers_retransmitted_syns_and_backs_off_its_own_timer() {
    let mut c = connector();
    let syn = c.poll_transmit(ms(0)).unwrap();
    let mut a = Acceptor::new(0, G);
    a.on_syn(ms(68), &syn);
    let first = a.poll_syn_ack(ms(68), 1 << 20).unwrap();
    assert_eq!(first.tsecr, syn.tsval);
    assert_eq!(first.wnd, 65_535, "a SYN-ACK's window is not scaled");
    assert!(a.poll_syn_ack(ms(68), 1 << 20).is_none());
    assert_eq!(a.next_wakeup(), Some(ms(1068)));
    // A retransmitted SYN: the SYN-ACK again (still echoing the first SYN), the timer
    // restarted from now.
    c.on_timer(ms(1000));
    let again = c.poll_transmit(ms(1000)).unwrap();
    a.on_syn(ms(1039), &again);
    assert_eq!(a.poll_syn_ack(ms(1039), 1 << 20).unwrap().tsecr, syn.tsval);
    assert_eq!(a.next_wakeup(), Some(ms(2039)));
    a.on_syn(ms(1300), &again);
    assert!(
        a.poll_syn_ack(ms(1300), 1 << 20).is_none(),
        "rate-limited to one per 500 ms"
    );
    // Its own timer doubles: 1, 2, 4, 8, 16 s, then the request is dropped.
    let mut fired = vec![];
    while let Some(t) = a.next_wakeup() {
        a.on_timer(t);
        if a.poll_syn_ack(t, 1 << 20).is_some() {
            fired.push(t.as_ms());
        }
    }
    assert_eq!(fired, vec![2039, 4039, 8039, 16039, 32039]);
    assert!(!a.is_established());
}

#[test]
fn acceptor_is_established_by_the_first_non_syn_segment() {
    let mut c = connector();
    let syn = c.poll_transmit(ms(0)).unwrap();
    let mut a = Acceptor::new(0, G);
    assert!(!a.on_segment(), "nothing to establish before a SYN");
    a.on_syn(ms(10), &syn);
    assert!(a.on_segment());
    assert!(a.is_established());
    assert!(a.next_wakeup().is_none());
    assert!(!a.on_segment(), "established once");
}

/// Records the min_rtt a congestion control's `init` sees.
#[derive(Debug)]
struct SeesMinRtt(Arc<Mutex<Option<Dur>>>);

impl CongestionControl for SeesMinRtt {
    fn name(&self) -> &'static str {
        "sees-min-rtt"
    }
    fn init(&mut self, sock: &mut Sock) {
        *self.0.lock().unwrap() = Some(sock.min_rtt);
    }
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }
    fn cong_avoid(&mut self, _sock: &mut Sock, _acked: u32) {}
}

fn established(rtt_ms: u64, syn_retransmits: u32) -> Established {
    Established {
        rtt: Dur::from_ms(rtt_ms),
        syn_retransmits,
        snd_wnd: 64_240,
        ts_recent: 94,
    }
}

#[test]
fn the_handshake_seeds_srtt_rto_and_min_rtt_before_the_congestion_control_starts() {
    let seen = Arc::new(Mutex::new(None));
    let cc = SeesMinRtt(seen.clone());
    let cfg = SenderConfig {
        hz: 250,
        ..SenderConfig::default()
    };
    let s = TcpSender::after_handshake(
        0,
        &cfg,
        Box::new(cc),
        App::Bulk,
        ms(1076),
        &established(1070, 1),
    );
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Dur::from_ms(1070)),
        "BBR's init reads tcp_min_rtt"
    );
    assert_eq!(s.sock().srtt, Dur::from_ms(1070));
    // RTO = srtt + max(2·m, rto_min), in whole ticks: the kernel's tcp_info showed 3212 ms.
    assert_eq!(s.rto(), Dur::from_ms(3212));
    assert_eq!(s.sock().cwnd, 10);
    // Without a handshake nothing is known and the RTO is the initial 1 s.
    let plain = TcpSender::new(
        0,
        &cfg,
        Box::new(SeesMinRtt(seen.clone())),
        App::Bulk,
        ms(0),
    );
    assert_eq!(*seen.lock().unwrap(), Some(Dur::MAX));
    assert_eq!(plain.rto(), Dur::from_secs(1));
}

#[test]
fn more_than_one_syn_retransmission_starts_the_flow_at_cwnd_one() {
    let cfg = SenderConfig::default();
    let one = TcpSender::after_handshake(
        0,
        &cfg,
        Box::new(TestReno::default()),
        App::Bulk,
        ms(0),
        &established(50, 1),
    );
    assert_eq!(one.sock().cwnd, 10);
    let two = TcpSender::after_handshake(
        0,
        &cfg,
        Box::new(TestReno::default()),
        App::Bulk,
        ms(0),
        &established(50, 2),
    );
    assert_eq!(two.sock().cwnd, 1);
}
