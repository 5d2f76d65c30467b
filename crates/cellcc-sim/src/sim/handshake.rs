//! The three-way handshake in the event loop (`[tcp] handshake`; the state machines are in
//! [`crate::tcp::handshake`]). A flow's SYN, pure ACKs and SYN-ACKs take the same paths
//! as its data and ACKs, and count as its packets on the links. The sender is built when
//! the first SYN-ACK arrives; its first data waits for a wake-up at the same instant, so
//! that every SYN-ACK already on its way in (a retransmitted one arriving in the same
//! burst) is handled first, as the application only writes after the kernel has
//! processed them. The receiver is built when the first non-SYN segment arrives.

use cellcc_congestion::{CongestionControl, ReceiverAgent};
use cellcc_units::Time;

use super::{claim, Event, Simulation};
use crate::control::FlowControl;
use crate::packet::{AckSegment, DataSegment};
use crate::tcp::handshake::{Acceptor, Connector};
use crate::tcp::{TcpReceiver, TcpSender};

/// A flow's connection set-up: both sides' handshake state, and what each side's
/// endpoint is built from once its side is established.
pub(super) struct Connection {
    connector: Connector,
    acceptor: Acceptor,
    /// Taken by the sender when the SYN-ACK arrives.
    pending: Option<(Box<dyn CongestionControl>, Option<FlowControl>)>,
    /// Taken by the receiver when the connection is established on its side.
    agent: Option<Box<dyn ReceiverAgent>>,
}

impl Simulation<'_> {
    /// Start flow `i` with a handshake: its SYN goes out now.
    pub(super) fn connect(
        &mut self,
        i: u32,
        cc: Box<dyn CongestionControl>,
        control: Option<FlowControl>,
        agent: Option<Box<dyn ReceiverAgent>>,
    ) {
        let (s, r) = (&self.sc.sender, &self.sc.receiver);
        self.flows[i as usize].conn = Some(Box::new(Connection {
            connector: Connector::new(i, s.ts_granularity, s.rto_max),
            acceptor: Acceptor::new(i, r.ts_granularity),
            pending: Some((cc, control)),
            agent,
        }));
        self.pump_sender(i);
    }

    /// Put flow `i`'s due handshake segments (SYN, pure ACKs) on the wire.
    pub(super) fn send_handshake(&mut self, i: u32) {
        let now = self.now;
        while let Some(seg) = self.flows[i as usize]
            .conn
            .as_mut()
            .and_then(|c| c.connector.poll_transmit(now))
        {
            self.emit_segment(i, seg);
        }
    }

    /// When flow `i`'s connecting side next needs attention (its SYN timer).
    pub(super) fn connector_wakeup(&self, i: u32) -> Option<Time> {
        self.flows[i as usize]
            .conn
            .as_ref()?
            .connector
            .next_wakeup()
    }

    /// The SYN timer of flow `i` may have expired.
    pub(super) fn connector_timer(&mut self, i: u32) {
        let now = self.now;
        if let Some(c) = self.flows[i as usize].conn.as_mut() {
            c.connector.on_timer(now);
        }
    }

    /// A SYN-ACK reached flow `i`'s connecting side. The first builds the sender; the
    /// ACK it calls for goes out at once, the data at a wake-up at this same instant.
    pub(super) fn syn_ack_arrived(&mut self, ack: AckSegment) {
        self.count.acks_delivered += 1;
        let i = ack.flow;
        let now = self.now;
        let Some(c) = self.flows[i as usize].conn.as_mut() else {
            return;
        };
        if let Some(hs) = c.connector.on_syn_ack(now, &ack) {
            let (cc, control) = c
                .pending
                .take()
                .expect("the first SYN-ACK finds the sender's parts waiting");
            let app = self.flows[i as usize].app;
            let sender = TcpSender::after_handshake(i, &self.sc.sender, cc, app, now, &hs);
            self.install_sender(i, sender, control);
            if let Some(t) = claim(now, &mut self.flows[i as usize].sender_timer, Some(now)) {
                self.push(t, Event::SenderTimer(i));
            }
        }
        self.send_handshake(i);
    }

    /// A segment of flow `i`'s connecting side reached the listening side while the
    /// connection is being set up, or a payload-free one after. Returns true if the
    /// segment ends here (a SYN, a pure ACK); data goes on to the receiver, which the
    /// first non-SYN segment builds.
    pub(super) fn handshake_segment_arrived(&mut self, seg: &DataSegment) -> bool {
        let i = seg.flow;
        let now = self.now;
        let Some(c) = self.flows[i as usize].conn.as_mut() else {
            return false;
        };
        if seg.syn {
            c.acceptor.on_syn(now, seg);
            self.send_syn_acks(i);
            self.arm_receiver(i);
            return true;
        }
        if c.acceptor.on_segment() {
            let agent = c.agent.take();
            self.flows[i as usize].receiver =
                Some(TcpReceiver::new(i, &self.sc.receiver, now).with_agent(agent));
            self.arm_receiver(i);
        }
        seg.is_control()
    }

    /// Send flow `i`'s due SYN-ACKs.
    pub(super) fn send_syn_acks(&mut self, i: u32) {
        let now = self.now;
        let wnd = TcpReceiver::syn_window(&self.sc.receiver);
        while let Some(a) = self.flows[i as usize]
            .conn
            .as_mut()
            .and_then(|c| c.acceptor.poll_syn_ack(now, wnd))
        {
            self.send_ack(i, a);
        }
    }

    /// When flow `i`'s listening side next needs attention (its SYN-ACK timer).
    pub(super) fn acceptor_wakeup(&self, i: u32) -> Option<Time> {
        self.flows[i as usize]
            .conn
            .as_ref()
            .and_then(|c| c.acceptor.next_wakeup())
    }

    /// The SYN-ACK timer of flow `i` may have expired.
    pub(super) fn acceptor_timer(&mut self, i: u32) {
        let now = self.now;
        if let Some(c) = self.flows[i as usize].conn.as_mut() {
            c.acceptor.on_timer(now);
        }
        self.send_syn_acks(i);
    }
}
