//! One test driver for every algorithm: a [`Sock`], a controller, and the stack's side
//! of the hooks in Linux's order, so that an algorithm's tests hold only its logic and
//! read as a story (`send`, `ack`, `lose`, `recover`, `rto`, `advance`).
//!
//! Built for this crate's tests and, with the cargo feature `testing`, for other crates'.
//!
//! Per ACK ([`Driver::ack`], [`Driver::ack_with`], [`Driver::sack_with`]), as `tcp_ack`
//! does it:
//! 1. the socket's counters advance: `delivered` by the packets acked,
//!    `delivered_mstamp` to now, and `snd_una` up and `packets_out` down by the packets
//!    acked (or, for a SACK, `sacked_out` up);
//! 2. [`in_ack_event`](CongestionControl::in_ack_event), on the slow path for a SACK;
//! 3. [`pkts_acked`](CongestionControl::pkts_acked), when packets were acked;
//! 4. [`cong_control`](CongestionControl::cong_control) with the rate sample if the
//!    algorithm owns cwnd; otherwise [`cong_avoid`](CongestionControl::cong_avoid)
//!    unless the connection is in CWR or Recovery (where Linux runs PRR, which the
//!    driver does not model: a story in Recovery sets cwnd itself, or opts in with
//!    [`Driver::cong_avoid_in_reduction`]);
//! 5. a [`Driver::bulk`] sender refills the window.
//!
//! The driver has no clock of its own: [`Driver::advance`] and [`Driver::at`] move
//! `sock.now`.

use crate::{
    AckSample, CaEvent, CaState, CongestionControl, Dur, RateSample, Sock, Time, INFINITE_SSTHRESH,
};

/// Payload bytes per packet unless a story sets `sock.mss`: Ethernet's 1500-byte MTU
/// less IPv4, TCP and timestamp-option headers.
pub const MSS: u32 = 1448;

/// A connection driven by hand. The fields are public: a story may set up or inspect
/// any socket field, and call the controller's own methods.
#[derive(Debug)]
pub struct Driver<C> {
    /// The controller under test.
    pub cc: C,
    /// The socket the hooks read and write; `sock.now` is the driver's clock.
    pub sock: Sock,
    /// Refill the window after every ACK and recovery (a bulk sender that always has
    /// data). Off: packets go out only when the story calls [`Driver::send`].
    pub bulk: bool,
    /// Call `cong_avoid` in CWR and Recovery too, as a harness without PRR does when
    /// it wants the algorithm's own reaction to ACKs during a reduction.
    pub cong_avoid_in_reduction: bool,
}

/// A controller the driver can run: any [`CongestionControl`], or a boxed one as the
/// scheme registry builds it.
pub trait Controller {
    /// The controller's hooks.
    fn hooks(&mut self) -> &mut dyn CongestionControl;
}

impl<T: CongestionControl> Controller for T {
    fn hooks(&mut self) -> &mut dyn CongestionControl {
        self
    }
}

impl Controller for Box<dyn CongestionControl> {
    fn hooks(&mut self) -> &mut dyn CongestionControl {
        self.as_mut()
    }
}

impl<C: Controller> Driver<C> {
    /// A connection at time zero with [`MSS`]-byte packets; `cc.init` not called yet, so
    /// that a story can set the socket up first ([`Driver::init`]).
    pub fn new(cc: C) -> Self {
        Driver {
            cc,
            sock: Sock::new(MSS, Time::ZERO),
            bulk: false,
            cong_avoid_in_reduction: false,
        }
    }

    /// `init`: the connection is established.
    pub fn init(&mut self) -> &mut Self {
        self.cc.hooks().init(&mut self.sock);
        self
    }

    /// A connection set up by `setup`, then established.
    pub fn started(cc: C, setup: impl FnOnce(&mut Sock)) -> Self {
        let mut d = Driver::new(cc);
        setup(&mut d.sock);
        d.init();
        d
    }

    /// Make this a bulk sender and fill the window now.
    pub fn bulk(mut self) -> Self {
        self.bulk = true;
        self.fill();
        self
    }

    /// Let `d` pass.
    pub fn advance(&mut self, d: Dur) -> &mut Self {
        self.sock.now += d;
        self
    }

    /// Move the clock to `t`.
    pub fn at(&mut self, t: Time) -> &mut Self {
        self.sock.now = t;
        self
    }

    /// Send `n` new packets now; the window must admit them.
    pub fn send(&mut self, n: u32) {
        let s = &mut self.sock;
        assert!(
            s.packets_in_flight() + n <= s.cwnd,
            "window {} does not admit {n} more after {}",
            s.cwnd,
            s.packets_in_flight()
        );
        s.snd_nxt += u64::from(n);
        s.packets_out += n;
        s.max_packets_out = s.max_packets_out.max(s.packets_out);
        if n > 0 {
            s.lsndtime = s.now;
        }
    }

    /// Send until `cwnd` packets are outstanding (`max_packets_out` follows).
    pub fn fill(&mut self) {
        let s = &mut self.sock;
        let before = s.snd_nxt;
        s.snd_nxt = s.snd_nxt.max(s.snd_una + u64::from(s.cwnd));
        s.packets_out = (s.snd_nxt - s.snd_una) as u32;
        s.max_packets_out = s.packets_out;
        if s.snd_nxt > before {
            s.lsndtime = s.now;
        }
    }

    /// Packets sent and neither acked nor abandoned (`snd_nxt − snd_una`).
    pub fn outstanding(&self) -> u32 {
        (self.sock.snd_nxt - self.sock.snd_una) as u32
    }

    /// An ACK now for `n` packets carrying RTT sample `rtt`. Owners of cwnd get a rate
    /// sample without a delivery rate (`interval` unset); stories that need one use
    /// [`Driver::ack_with`].
    pub fn ack(&mut self, n: u32, rtt: Option<Dur>) -> &mut Self {
        let rs = RateSample {
            acked_sacked: n,
            rtt,
            prior_in_flight: self.sock.packets_in_flight(),
            ..RateSample::default()
        };
        self.ack_with(&rs)
    }

    /// An ACK now for `rs.acked_sacked` packets carrying RTT sample `rs.rtt`, with the
    /// rate sample `rs` for algorithms that own cwnd.
    pub fn ack_with(&mut self, rs: &RateSample) -> &mut Self {
        self.on_ack(rs, false)
    }

    /// An ACK now carrying SACK blocks for `rs.acked_sacked` packets (`snd_una` does not
    /// move, `sacked_out` grows): Linux's slow path.
    pub fn sack_with(&mut self, rs: &RateSample) -> &mut Self {
        self.on_ack(rs, true)
    }

    fn on_ack(&mut self, rs: &RateSample, sacked: bool) -> &mut Self {
        let n = rs.acked_sacked;
        let s = &mut self.sock;
        let in_flight = s.packets_in_flight();
        if sacked {
            s.sacked_out += n;
        } else {
            s.snd_una += u64::from(n);
            s.packets_out = s.packets_out.saturating_sub(n);
        }
        s.delivered += u64::from(n);
        s.delivered_mstamp = s.now;
        self.cc.hooks().in_ack_event(s, sacked);
        if n > 0 {
            let sample = AckSample {
                pkts_acked: n,
                rtt: rs.rtt,
                in_flight,
            };
            self.cc.hooks().pkts_acked(s, &sample);
        }
        if self.cc.hooks().owns_cwnd() {
            self.cc.hooks().cong_control(s, rs);
        } else if self.cong_avoid_in_reduction
            || !matches!(s.ca_state, CaState::Cwr | CaState::Recovery)
        {
            self.cc.hooks().cong_avoid(s, n);
        }
        if self.bulk {
            self.fill();
        }
        self
    }

    /// Every packet outstanding when the round starts acked singly, `gap` apart, each
    /// ACK carrying RTT sample `rtt`.
    pub fn ack_round(&mut self, gap: Dur, rtt: Dur) {
        for _ in 0..self.outstanding() {
            self.advance(gap).ack(1, Some(rtt));
        }
    }

    /// A loss detected by duplicate ACKs: `tcp_enter_recovery` (cwnd still as it was;
    /// PRR, not modelled, would bring it down to ssthresh).
    pub fn lose(&mut self) {
        let s = &mut self.sock;
        s.prior_cwnd = s.cwnd;
        s.ssthresh = self.cc.hooks().ssthresh(s);
        self.set_state(CaState::Recovery);
    }

    /// Recovery ends now: everything outstanding is acked, cwnd is ssthresh (as PRR
    /// leaves it), back to Open with `CA_EVENT_COMPLETE_CWR`.
    pub fn recover(&mut self) {
        let s = &mut self.sock;
        let acked = s.snd_nxt - s.snd_una;
        s.snd_una = s.snd_nxt;
        s.delivered += acked;
        s.packets_out = 0;
        s.delivered_mstamp = s.now;
        s.cwnd = s.ssthresh;
        self.set_state(CaState::Open);
        self.cc
            .hooks()
            .cwnd_event(&mut self.sock, CaEvent::CompleteCwr);
        if self.bulk {
            self.fill();
        }
    }

    /// A retransmission timeout, as `tcp_enter_loss` does it: ssthresh from the
    /// algorithm, `CA_EVENT_LOSS`, everything outstanding marked lost, cwnd =
    /// in flight + 1, then Loss. The lost packets are abandoned (their retransmissions
    /// are new packets to the driver).
    pub fn rto(&mut self) {
        let s = &mut self.sock;
        s.prior_cwnd = s.cwnd;
        s.ssthresh = self.cc.hooks().ssthresh(s);
        self.cc.hooks().cwnd_event(s, CaEvent::Loss);
        s.lost_out = s.packets_out;
        s.lost += u64::from(s.packets_out);
        s.cwnd = s.packets_in_flight() + 1;
        self.set_state(CaState::Loss);
        let s = &mut self.sock;
        s.snd_una = s.snd_nxt;
        s.packets_out = 0;
        s.lost_out = 0;
        if self.bulk {
            self.fill();
        }
    }

    /// `tcp_set_ca_state`: the hook sees the old state, then the socket takes the new.
    pub fn set_state(&mut self, state: CaState) {
        self.cc.hooks().set_state(&mut self.sock, state);
        self.sock.ca_state = state;
    }
}

/// A socket at time zero with [`MSS`]-byte packets, cwnd-limited at `cwnd` with
/// `ssthresh`, after a full window went out (`max_packets_out = cwnd`): where the
/// formula tests that call a controller's hooks by hand start.
pub fn cwnd_limited_sock(cwnd: u32, ssthresh: u32) -> Sock {
    let mut s = Sock::new(MSS, Time::ZERO);
    s.cwnd = cwnd;
    s.ssthresh = ssthresh;
    s.is_cwnd_limited = true;
    s.max_packets_out = cwnd;
    s
}

/// `pkts_acked` alone, for `pkts` packets carrying RTT sample `rtt`, with cwnd in
/// flight.
pub fn pkts_acked(cc: &mut impl CongestionControl, sock: &mut Sock, pkts: u32, rtt: Option<Dur>) {
    let sample = AckSample {
        pkts_acked: pkts,
        rtt,
        in_flight: sock.cwnd,
    };
    cc.pkts_acked(sock, &sample);
}

/// A configuration read from `(key, value)` pairs, as a scenario's `params` table with
/// integer values deserializes.
pub fn from_pairs<T: serde::de::DeserializeOwned>(
    pairs: &[(&str, u32)],
) -> Result<T, serde::de::value::Error> {
    let map = serde::de::value::MapDeserializer::new(pairs.iter().copied());
    T::deserialize(map)
}

/// Linux's rule that a congestion control provides `cong_avoid` or `cong_control`
/// (`tcp_validate_congestion_control`), checked by behaviour: an algorithm that does not
/// own cwnd must raise it on an ACK of a cwnd-limited flow in slow start (Open state,
/// cwnd 10, no ssthresh yet). Run it on a fresh controller.
pub fn check_cong_avoid_or_cong_control(cc: Box<dyn CongestionControl>) -> Result<(), String> {
    if cc.owns_cwnd() {
        return Ok(());
    }
    let mut d = Driver::started(cc, |s| {
        s.cwnd = 10;
        s.ssthresh = INFINITE_SSTHRESH;
        s.is_cwnd_limited = true;
    })
    .bulk();
    let before = (d.sock.cwnd, d.sock.cwnd_cnt);
    d.advance(Dur::from_ms(1)).ack(1, Some(Dur::from_ms(40)));
    if (d.sock.cwnd, d.sock.cwnd_cnt) == before {
        return Err(format!(
            "{}: does not own cwnd, yet cwnd stayed {} on an ACK in slow start; \
             override cong_avoid, or own cwnd (owns_cwnd and cong_control)",
            d.cc.hooks().name(),
            before.0
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reno::NewReno;

    /// A scheme that forgot both hooks.
    #[derive(Debug)]
    struct Inert;

    impl CongestionControl for Inert {
        fn name(&self) -> &'static str {
            "inert"
        }
        fn ssthresh(&mut self, sock: &Sock) -> u32 {
            sock.cwnd
        }
    }

    #[test]
    fn the_hook_rule_accepts_reno_and_rejects_a_scheme_without_either_hook() {
        assert_eq!(
            check_cong_avoid_or_cong_control(Box::new(NewReno::new())),
            Ok(())
        );
        let e = check_cong_avoid_or_cong_control(Box::new(Inert)).unwrap_err();
        assert!(e.starts_with("inert: "), "{e}");
    }

    #[test]
    fn a_bulk_round_acks_the_window_and_keeps_it_full() {
        let mut d = Driver::started(NewReno::new(), |s| s.is_cwnd_limited = true).bulk();
        assert_eq!(d.outstanding(), 10);
        d.ack_round(Dur::from_ms(1), Dur::from_ms(40));
        assert_eq!((d.sock.cwnd, d.outstanding()), (20, 20));
        assert_eq!(d.sock.delivered, 10);
        assert_eq!(d.sock.now, Time::from_ms(10));
    }

    #[test]
    fn loss_recovery_and_rto_follow_linux() {
        let mut d = Driver::started(NewReno::new(), |s| {
            s.cwnd = 20;
            s.is_cwnd_limited = true;
        })
        .bulk();
        d.lose();
        assert_eq!((d.sock.ca_state, d.sock.ssthresh), (CaState::Recovery, 10));
        d.ack(1, None);
        assert_eq!(d.sock.cwnd, 20, "no cong_avoid in Recovery");
        d.recover();
        assert_eq!((d.sock.ca_state, d.sock.cwnd), (CaState::Open, 10));
        d.rto();
        assert_eq!((d.sock.ca_state, d.sock.cwnd), (CaState::Loss, 1));
        assert_eq!((d.sock.ssthresh, d.sock.prior_cwnd), (5, 10));
    }
}
