//! Starting a flow's endpoints (with or without the handshake) and letting its sender
//! put segments on the wire.

use super::{aggregate, claim, control, schemes, Direction, Event, Observer, Origin, Simulation};
use crate::control::{ControlError, External, FlowControl};
use crate::packet::{DataSegment, Packet};
use crate::rng;
use crate::tcp::{TcpReceiver, TcpSender};

impl Simulation<'_> {
    /// Start flow `i`; a failure (an external scheme that cannot be built) ends the run.
    pub(super) fn start_or_fail(&mut self, i: u32) {
        if let Err(e) = self.start_flow(i) {
            self.failure.get_or_insert(e);
        }
    }

    fn start_flow(&mut self, i: u32) -> Result<(), ControlError> {
        let (scheme, params) = match self.flows[i as usize].origin {
            Origin::Scenario(k) => (&self.sc.flows[k].scheme, &self.sc.flows[k].params),
            Origin::Short { background, .. } => {
                let b = &self.sc.background[background];
                (&b.scheme, &b.params)
            }
            Origin::Udp(_) => unreachable!("UDP sources have no TCP endpoints"),
        };
        let seed = rng::flow_seed(self.sc.seed, i);
        let mut control = None;
        let cc = if control::is_external(scheme) {
            let built = match self.external.as_mut() {
                Some(factory) => factory.build(i, scheme, params, seed),
                None => Err(crate::schemes::SchemeError {
                    key: "scheme".into(),
                    message: format!(
                        "{scheme:?} is an external scheme and this run has no factory for them"
                    ),
                }),
            };
            match built {
                Ok(External::Cc(cc)) => cc,
                Ok(External::Interval(ic)) => {
                    control = Some(FlowControl::new(ic.clock, ic.policy));
                    ic.base
                }
                Err(e) => {
                    return Err(ControlError {
                        flow: i,
                        t_s: self.now.as_secs_f64(),
                        message: format!("{}: {}", e.key, e.message),
                    })
                }
            }
        } else {
            // Scheme and parameters were validated when the scenario was loaded; a
            // scenario built by hand may still name a bad one.
            schemes::build(scheme, params, seed).map_err(|e| ControlError {
                flow: i,
                t_s: self.now.as_secs_f64(),
                message: format!("{}: {}", e.key, e.message),
            })?
        };
        // Schemes that compute at the receiver (Sprout) hand it their agent.
        let agent = cc.receiver_agent();
        if self.sc.sender.handshake {
            self.connect(i, cc, control, agent);
            return Ok(());
        }
        let now = self.now;
        let mut sender = TcpSender::new(i, &self.sc.sender, cc, self.flows[i as usize].app, now);
        let receiver = TcpReceiver::new(i, &self.sc.receiver, now).with_agent(agent);
        // The handshake's window (no handshake is modelled; SYN-ACK windows are unscaled).
        sender.set_snd_wnd(receiver.initial_window());
        self.install_sender(i, sender, control);
        self.flows[i as usize].receiver = Some(receiver);
        self.pump_sender(i);
        Ok(())
    }

    /// Give flow `i` its sender, and start its per-interval control, if it has one, from
    /// the sender's state.
    pub(super) fn install_sender(
        &mut self,
        i: u32,
        sender: TcpSender,
        control: Option<FlowControl>,
    ) {
        if let Some(mut ctl) = control {
            let first = ctl.start(self.now, &sender);
            self.flows[i as usize].control = Some(ctl);
            self.push_boundary(first, i);
        }
        self.flows[i as usize].sender = Some(sender);
    }

    /// Let sender `i` transmit everything it may now (its handshake's segments first),
    /// then re-arm its timer.
    pub(super) fn pump_sender(&mut self, i: u32) {
        let now = self.now;
        self.send_handshake(i);
        loop {
            let f = &mut self.flows[i as usize];
            let Some(s) = f.sender.as_mut() else { break };
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
            let Some(seg) = s.poll_transmit(now, &mut obs) else {
                break;
            };
            self.emit_segment(i, seg);
        }
        let f = &self.flows[i as usize];
        let want = match f.sender.as_ref() {
            Some(s) => s.next_wakeup(),
            None => self.connector_wakeup(i),
        };
        if let Some(t) = claim(self.now, &mut self.flows[i as usize].sender_timer, want) {
            self.push(t, Event::SenderTimer(i));
        }
    }

    /// Flow `i`'s sender puts `seg` on the wire: entry loss, then its direction's path.
    pub(super) fn emit_segment(&mut self, i: u32, seg: DataSegment) {
        let (origin, dir, ue) = {
            let f = &self.flows[i as usize];
            (f.origin, f.dir, f.ue)
        };
        let len = seg.ip_len();
        let all = aggregate(origin, dir, &mut self.all, &mut self.all_up, &mut self.bg);
        self.count.data_sent += 1;
        self.metrics[i as usize].sent_ip_bytes += len as u64;
        all.sent_ip_bytes += len as u64;
        let (loss, rng) = match dir {
            Direction::Down => (&mut self.down_loss, &mut self.down_rng),
            Direction::Up => (&mut self.up_loss, &mut self.up_rng),
        };
        if loss.drops(rng) {
            self.metrics[i as usize].drops_random += 1;
            all.drops_random += 1;
            self.count.data_dropped += 1;
            return;
        }
        match dir {
            Direction::Down => self.send_down(Packet::Data(seg), len),
            Direction::Up => {
                self.up_data_in_network += 1;
                self.send_up(ue, Packet::Data(seg), len);
            }
        }
    }
}
