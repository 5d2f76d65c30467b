//! How packets move through the two directions: entry into the downlink and the uplink,
//! the radio services, drops, exits at either end, and delivery of data to receivers
//! and of ACKs to senders. The event loop in the parent module calls in here;
//! everything below runs at the current simulated time, `self.now`.

use cellcc_link::EnqueueResult;
use cellcc_units::Time;

use super::{aggregate, claim, AckRecord, Carried, ChainId, Event, Observer, Origin, Simulation};
use crate::packet::{AckRef, AckSegment, DataSegment, DownPacket, Packet, UpPacket};
use crate::scenario::Direction;
use crate::tcp::App;

impl Simulation<'_> {
    /// A packet enters the downlink (after entry loss): the pre-radio chain, then the
    /// radio.
    pub(super) fn send_down(&mut self, pkt: DownPacket, ip_len: u32) {
        let now = self.now;
        if self.down_pre.is_pass_through() {
            self.enqueue_radio(now, pkt, ip_len);
            return;
        }
        if self.down_pre.is_delay() {
            if let Some(t) = self.down_pre.push_delayed(now, pkt, ip_len) {
                self.push(t, Event::Stage(ChainId::DownPre, 0));
            }
            return;
        }
        let mut wakeups = std::mem::take(&mut self.wakeups);
        self.down_pre.push(now, pkt, ip_len, &mut wakeups);
        self.schedule_stages(ChainId::DownPre, &mut wakeups);
        self.wakeups = wakeups;
        self.drain_chain(ChainId::DownPre);
    }

    /// A packet enters UE `ue`'s uplink (after entry loss): its radio queue, then its
    /// post-radio chain.
    pub(super) fn send_up(&mut self, ue: u32, pkt: UpPacket, ip_len: u32) {
        let now = self.now;
        if let EnqueueResult::Dropped(d) = self.up_radio[ue as usize].link.enqueue(now, pkt, ip_len)
        {
            self.drop_up(&d);
        }
        self.service_up(ue);
    }

    /// A packet was lost inside the downlink path (a queue, an outage, a stage). Out of
    /// line, as is [`Simulation::drop_up`]: drops are rare next to deliveries.
    #[inline(never)]
    pub(super) fn drop_down(&mut self, pkt: &DownPacket) {
        match *pkt {
            Packet::Data(d) => self.record_data_drop(d.flow),
            Packet::Ack(r) => {
                self.down_acks.take(r);
                self.count.acks_dropped += 1;
            }
        }
    }

    /// A packet was lost inside the uplink path.
    #[inline(never)]
    pub(super) fn drop_up(&mut self, pkt: &UpPacket) {
        match pkt {
            Packet::Ack(_) => self.count.acks_dropped += 1,
            Packet::Data(d) => {
                self.up_data_in_network -= 1;
                self.record_data_drop(d.flow);
            }
        }
    }

    /// A packet leaves the downlink at `t`: data reaches its receiver at the UE, an ACK
    /// its sender at the UE.
    #[inline]
    pub(super) fn exit_down(&mut self, t: Time, c: Carried<DownPacket>, ip_len: u32) {
        match c.pkt {
            Packet::Data(seg) => self.deliver_data(t, seg, c.queued_at, ip_len, Direction::Down),
            Packet::Ack(ack) => self.deliver_down_ack(ack),
        }
    }

    /// A packet leaves the uplink at `t`: an ACK reaches its sender at the server, data
    /// its receiver at the server.
    #[inline]
    pub(super) fn exit_up(&mut self, t: Time, c: Carried<UpPacket>, ip_len: u32) {
        match c.pkt {
            Packet::Ack(ack) => self.deliver_ack(ack),
            Packet::Data(seg) => self.deliver_up_data(t, seg, c.queued_at, ip_len),
        }
    }

    /// An uplink flow's ACK reaches it (kept out of the downlink's data path).
    #[cold]
    #[inline(never)]
    fn deliver_down_ack(&mut self, r: AckRef) {
        let ack = self.down_acks.take(r);
        self.deliver_ack(ack);
    }

    /// An uplink flow's data reaches its receiver (kept out of the uplink's ACK path).
    #[cold]
    #[inline(never)]
    fn deliver_up_data(&mut self, t: Time, seg: DataSegment, queued_at: Time, ip_len: u32) {
        self.up_data_in_network -= 1;
        self.deliver_data(t, seg, queued_at, ip_len, Direction::Up);
    }

    pub(super) fn arm_receiver(&mut self, i: u32) {
        let want = match self.flows[i as usize].receiver.as_ref() {
            Some(r) => r.next_wakeup(),
            None => self.acceptor_wakeup(i),
        };
        if let Some(t) = claim(self.now, &mut self.flows[i as usize].receiver_timer, want) {
            self.push(t, Event::ReceiverTimer(i));
        }
    }

    fn arm_radio(&mut self) {
        let want = self.radio.link.next_wakeup();
        if let Some(t) = claim(self.now, &mut self.radio.timer, want) {
            self.push(t, Event::DownRadio);
        }
    }

    fn arm_up_radio(&mut self, u: u32) {
        let want = self.up_radio[u as usize].link.next_wakeup();
        if let Some(t) = claim(self.now, &mut self.up_radio[u as usize].timer, want) {
            self.push(t, Event::UpRadio(u));
        }
    }

    pub(super) fn enqueue_radio(&mut self, at: Time, pkt: DownPacket, ip_len: u32) {
        // The mm-link log takes the arrival, its refusal, then what the link reports
        // (`service_radio`), as the emulator's `Direction` logs them; the log puts the
        // departures served up to `at` before the arrival (Mahimahi's order).
        if let Some(log) = self.log.as_mut() {
            let _ = log.arrival(at, ip_len + self.down_framing[0]);
        }
        let ue = self.flows[pkt.flow() as usize].ue;
        if let EnqueueResult::Dropped(d) = self.radio.link.enqueue(at, ue, pkt, ip_len) {
            if let Some(log) = self.log.as_mut() {
                let _ = log.drop_on_arrival(at, ip_len + self.down_framing[0]);
            }
            self.drop_down(&d);
        }
        // Serve what is due now; this also records drops the enqueue caused.
        self.service_radio();
    }

    fn record_data_drop(&mut self, flow: u32) {
        self.count.data_dropped += 1;
        self.metrics[flow as usize].drops_queue += 1;
        let f = &self.flows[flow as usize];
        aggregate(
            f.origin,
            f.dir,
            &mut self.all,
            &mut self.all_up,
            &mut self.bg,
        )
        .drops_queue += 1;
    }

    /// Run the downlink radio up to now and hand departures to the UEs' chains.
    pub(super) fn service_radio(&mut self) {
        let now = self.now;
        self.radio.link.advance(now);
        while let Some(d) = self.radio.link.pop_drop() {
            if let Some(log) = self.log.as_mut() {
                let _ = log.link_drop(&d, d.ip_len + self.down_framing[0]);
            }
            self.drop_down(&d.item);
        }
        while let Some(dep) = self.radio.link.pop_departure() {
            if let Some(log) = self.log.as_mut() {
                let _ = log.departure(
                    dep.departed_at,
                    dep.ip_len + self.down_framing[0],
                    dep.enqueued_at,
                );
            }
            let ue = self.flows[dep.item.flow() as usize].ue;
            let carried = Carried {
                pkt: dep.item,
                queued_at: dep.enqueued_at,
            };
            let chain = &mut self.down_post[ue as usize];
            if chain.is_pass_through() {
                self.exit_down(dep.departed_at, carried, dep.ip_len);
            } else {
                let mut wakeups = std::mem::take(&mut self.wakeups);
                chain.push(dep.departed_at, carried, dep.ip_len, &mut wakeups);
                self.schedule_stages(ChainId::DownPost(ue as u16), &mut wakeups);
                self.wakeups = wakeups;
                self.drain_chain(ChainId::DownPost(ue as u16));
            }
        }
        self.arm_radio();
    }

    /// A data packet reaches its receiver at `t`, having crossed direction `dir`.
    fn deliver_data(
        &mut self,
        t: Time,
        seg: DataSegment,
        queued_at: Time,
        ip_len: u32,
        dir: Direction,
    ) {
        let bin = self.sc.metrics.bin;
        let i = seg.flow as usize;
        self.count.data_delivered += 1;
        let owd = t.saturating_since(seg.sent_at);
        let qdelay = t.saturating_since(queued_at);
        let framing = match dir {
            Direction::Down => self.down_framing[self.flows[i].ue as usize],
            Direction::Up => self.up_framing,
        };
        let charged = ip_len + framing;
        let origin = self.flows[i].origin;
        self.metrics[i].on_egress(t, ip_len, charged, owd, qdelay, bin);
        let all = aggregate(origin, dir, &mut self.all, &mut self.all_up, &mut self.bg);
        all.on_egress_counters(t, ip_len, charged, owd, qdelay, bin);
        let f = &self.flows[i];
        if f.conn.is_some()
            && (seg.is_control() || f.receiver.is_none())
            && self.handshake_segment_arrived(&seg)
        {
            return;
        }
        let all = aggregate(origin, dir, &mut self.all, &mut self.all_up, &mut self.bg);
        let Some(r) = self.flows[i].receiver.as_mut() else {
            // A UDP packet: its payload is what the application gets.
            self.metrics[i].on_app_delivered(t, u64::from(seg.len), bin);
            all.on_app_delivered(t, u64::from(seg.len), bin);
            return;
        };
        let out = r.on_data(t, &seg);
        if out.delivered_bytes > 0 {
            self.metrics[i].on_app_delivered(t, out.delivered_bytes, bin);
            all.on_app_delivered(t, out.delivered_bytes, bin);
            if let App::Bytes(n) = self.flows[i].app {
                if self.metrics[i].app_bytes >= n && self.metrics[i].completed_at.is_none() {
                    self.metrics[i].completed_at = Some(t);
                    if let Origin::Short { record, .. } = self.flows[i].origin {
                        self.short_flows[record].completed = Some(t);
                    }
                }
            }
        }
        if let Some(a) = out.ack {
            self.send_ack(seg.flow, a);
        }
        self.arm_receiver(seg.flow);
    }

    /// Flow `i`'s receiver sends an ACK: it takes the direction opposite the data.
    pub(super) fn send_ack(&mut self, i: u32, ack: AckSegment) {
        let f = &self.flows[i as usize];
        if f.dir == Direction::Up {
            return self.send_ack_down(ack);
        }
        let ue = f.ue;
        self.count.acks_sent += 1;
        if self.up_loss.drops(&mut self.up_rng) {
            self.count.acks_dropped += 1;
            return;
        }
        let ip_len = ack.ip_len();
        self.send_up(ue, Packet::Ack(ack), ip_len);
    }

    /// An uplink flow's receiver (at the server) sends an ACK down to the UE.
    #[cold]
    #[inline(never)]
    fn send_ack_down(&mut self, ack: AckSegment) {
        self.count.acks_sent += 1;
        if self.down_loss.drops(&mut self.down_rng) {
            self.count.acks_dropped += 1;
            return;
        }
        let ip_len = ack.ip_len();
        let r = self.down_acks.park(ack);
        self.send_down(Packet::Ack(r), ip_len);
    }

    pub(super) fn service_up(&mut self, u: u32) {
        let now = self.now;
        self.up_radio[u as usize].link.advance(now);
        while let Some(d) = self.up_radio[u as usize].link.pop_drop() {
            self.drop_up(&d.item);
        }
        let mut wakeups = std::mem::take(&mut self.wakeups);
        let mut any = false;
        while let Some(dep) = self.up_radio[u as usize].link.pop_departure() {
            let carried = Carried {
                pkt: dep.item,
                queued_at: dep.enqueued_at,
            };
            let chain = &mut self.up_post[u as usize];
            if chain.is_pass_through() {
                self.exit_up(dep.departed_at, carried, dep.ip_len);
            } else if chain.is_delay() {
                if let Some(t) = chain.push_delayed(dep.departed_at, carried, dep.ip_len) {
                    self.push(t, Event::Stage(ChainId::UpPost(u as u16), 0));
                }
            } else {
                chain.push(dep.departed_at, carried, dep.ip_len, &mut wakeups);
                any = true;
            }
        }
        if any {
            self.schedule_stages(ChainId::UpPost(u as u16), &mut wakeups);
            self.drain_chain(ChainId::UpPost(u as u16));
        }
        self.wakeups = wakeups;
        self.arm_up_radio(u);
    }

    fn deliver_ack(&mut self, ack: AckSegment) {
        if ack.syn {
            return self.syn_ack_arrived(ack);
        }
        self.count.acks_delivered += 1;
        let i = ack.flow;
        let now = self.now;
        let f = &mut self.flows[i as usize];
        if let Some(s) = f.sender.as_mut() {
            let mut obs = Observer {
                flow: &mut self.metrics[i as usize],
                all: aggregate(
                    f.origin,
                    f.dir,
                    &mut self.all,
                    &mut self.all_up,
                    &mut self.bg,
                ),
                last_rtt: None,
                fold: f.control.as_mut().and_then(|c| c.fold.as_mut()),
            };
            s.on_ack(now, &ack, &mut obs);
            let rtt = obs.last_rtt;
            if let Some(log) = self.ack_log.as_mut() {
                log.push(AckRecord {
                    flow: i,
                    t: now,
                    rtt,
                });
            }
        }
        self.pump_sender(i);
    }
}
