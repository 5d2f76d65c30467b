//! A shared LTE/NR cell: one queue per UE at the base station and a TTI scheduler that
//! shares the cell's air time among the UEs with data waiting.
//!
//! Sources:
//! - [PF] "Opportunistic Beamforming Using Dumb Antennas", IEEE Trans. Inf. Theory 48(6),
//!   June 2002: the proportional-fair rule and its moving average (`scheduler.rs`).
//! - 3GPP TS 36.211 (Release 15) §4: the LTE subframe, 1 ms, is the TTI; 3GPP TS 38.211
//!   (Release 15) §4.3.2: an NR slot lasts 1/2^μ ms, 0.5 ms at 30 kHz spacing (μ = 1).
//! - The LTE TCP study (`tcp-over-lte-study`), §3.2 Table 2 (proportional-fair MAC
//!   scheduler, a 750-PDU RLC queue per UE) and §5.1 (a loaded cell; capacity steps when
//!   background traffic starts or stops, Fig. 5).
//! - C2TCP, IEEE JSAC 2019, §V "Isolation of per-user queues" and §VI: deep per-user
//!   queues at the base station; the base station's scheduler, not TCP, shares the last
//!   mile among UEs.
//!
//! Model. UE u has its own queue ([`crate::QueueSpec`]: Mahimahi's disciplines or an
//! AQM) and its own [`UeChannel`]: `r_u(k)`, the bytes it would receive in TTI k if it
//! had the whole TTI. TTI k covers `[k·tti, (k+1)·tti)`. Each TTI goes whole to one UE:
//! the scheduler picks among the candidates, the UEs with data waiting and `r_u(k) >
//! 0`. The chosen UE sends up to `r_u(k)` bytes, byte by byte as on a Mahimahi link;
//! what it cannot use because its queue ran dry is wasted: never banked, never handed
//! to another UE. A UE with nothing queued is never scheduled, so its capacity goes to
//! the others.
//!
//! ```text
//!   UE state:   idle ──enqueue──► backlogged ──(its TTI empties queue and transit)──► idle
//!
//!   TTI k, at t_k = k·tti (after every arrival before t_k, before every arrival at t_k):
//!     candidates = { u backlogged : r_u(k) > 0 }
//!       ├─ none: the TTI passes (PF averages decay); a run of such TTIs is one step
//!       └─ u* = pick(candidates)            rr | pf: argmax r_u/R̄_u | mt: argmax r_u
//!            budget r_u*(k): finish u*'s packet in transit, then dequeue more
//!              ├─ a packet whose last byte is sent departs at t_k
//!              ├─ a packet cut off stays in transit with its remaining bytes
//!              └─ budget left with u*'s queue empty is wasted
//!            record(u*, bytes sent)         pf: R̄_u ← (1 − 1/t_c)·R̄_u + s_u/t_c, all u
//! ```
//!
//! Departures are at the start of the TTI that carries their last byte, as a Mahimahi
//! link delivers at the opportunity's instant: with a TTI that divides 1 ms, a one-UE cell
//! with a trace channel departs exactly like a trace [`crate::Link`] (a property test
//! checks this). Packets in the queue at `t_k` were all enqueued before `t_k`.
//!
//! Differences from [PF]:
//! 1. `s_u` is the bytes the UE was actually sent, less than `r_u` when its queue ran dry;
//!    [PF] assumes every user is always backlogged.
//! 2. Only UEs with data waiting and a non-zero channel compete; ties go to the lowest
//!    UE index (deterministic) rather than being broken at random.
//! 3. `R̄_u` starts at 0, so each UE wins the first TTI it competes for; averages are in
//!    bytes per TTI (the ratio `r_u/R̄_u` does not depend on the unit).
//!
//! Differences from real base stations and from ns-3 LENA's schedulers (the LTE study):
//! 1. One UE per TTI: the whole TTI, every resource block, goes to one UE; there is no
//!    split into resource-block groups and no frequency-selective channel.
//! 2. The scheduler knows `r_u(k)` exactly: no CQI reports or their delay, no MCS table,
//!    no block errors or HARQ retransmissions, no RLC/PDCP segmentation or headers.
//! 3. A transport block is delivered at the start of its TTI, with no air time; add a
//!    one-TTI delay stage after the cell to model it.
//! 4. Round robin passes over a UE whose channel carries nothing in this TTI (a real
//!    round robin would waste the TTI on it).
//! 5. Queues are Mahimahi disciplines counting packets and charged bytes, not RLC SDUs;
//!    the packet in transit does not count against the limit, as in Mahimahi.
//! 6. TTIs in which nobody can be served are skipped in one step: O(1) for a run of
//!    them (PF's decay `(1 − 1/t_c)^n` is at most 64 multiplications), so an idle cell
//!    costs nothing per TTI.
//!
//! Cost. Each backlogged UE's next useful TTI (the first from now on in which its
//! channel carries a byte) is kept in a sorted set, updated only when the UE becomes
//! backlogged or idle or that TTI passes: the next decision is the set's first entry and
//! its candidates are the entries of that TTI, in UE order, so a decision costs
//! O(log UEs) plus the candidates themselves (the scheduler must compare them). PF's
//! average update `R̄_u ← (1 − 1/t_c)·R̄_u` touches every UE each TTI, one vectorised
//! multiplication each: a lazily decayed average would round differently and change
//! decisions.

mod channel;
mod config;
mod scheduler;
#[cfg(test)]
mod tests;

pub use channel::UeChannel;
pub use config::{
    CellConfig, CellError, CellSpec, UeConfig, UeSpec, DEFAULT_PF_TC_TTIS, LTE_TTI, NR_TTI_30KHZ,
};
pub use scheduler::SchedulerKind;

use std::collections::{BTreeSet, VecDeque};

use cellcc_units::{Dur, Time};
use serde::{Deserialize, Serialize};

use crate::discipline::Discipline;
use crate::link::{Departure, EnqueueResult};
use crate::queue::{DropReason, DroppedPacket, PacketQueue, Queued};
use channel::{tti_start, Cursor};
use scheduler::{Candidate, Scheduler};

/// Odd 64-bit constant (2^64 / golden ratio) spreading UE indices over queue seeds.
const QUEUE_SEED_SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

/// Counters of one UE since the cell was built, up to the last `advance`/`enqueue`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UeStats {
    /// Packets the UE's queue accepted.
    pub packets_accepted: u64,
    /// Packets that finished crossing the channel.
    pub packets_departed: u64,
    /// IP bytes of departed packets.
    pub ip_bytes_departed: u64,
    /// Charged bytes (IP + framing) of departed packets.
    pub charged_bytes_departed: u64,
    /// Arrivals a drop-tail limit rejected.
    pub drops_queue_full: u64,
    /// Packets pushed out of the head of a drop-head queue.
    pub drops_head: u64,
    /// Arrivals whose charged size exceeds one delivery opportunity.
    pub drops_too_big: u64,
    /// Dropped by the UE's AQM (CoDel at dequeue, PIE at arrival).
    pub drops_aqm: u64,
    /// TTIs given to this UE.
    pub ttis_scheduled: u64,
    /// UeChannel bytes of those TTIs: `served_bytes + wasted_bytes`.
    pub bytes_scheduled: u64,
    /// Bytes sent over the air: charged bytes departed plus the part already sent of the
    /// packet in transit.
    pub served_bytes: u64,
    /// Bytes of its TTIs the UE could not use because its queue ran dry.
    pub wasted_bytes: u64,
}

/// Counters of the whole cell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellStats {
    /// TTIs elapsed, used or not.
    pub ttis: u64,
    /// TTIs given to some UE (the rest had no candidate).
    pub ttis_scheduled: u64,
}

/// A packet part-way through its UE's channel.
#[derive(Debug)]
struct Partial<T> {
    packet: Queued<T>,
    bytes_left: u32,
}

#[derive(Debug)]
struct Ue<T> {
    channel: UeChannel,
    /// How far the channel has been read (moves with `next_tti`).
    cursor: Cursor,
    queue: Discipline<T>,
    in_transit: Option<Partial<T>>,
    stats: UeStats,
    /// Its key in [`Cell::ready`]: the first TTI from `next_tti` on in which its channel
    /// carries a byte, while it is backlogged (`None`: idle, or no such TTI remains).
    ready_at: Option<u64>,
}

impl<T> Ue<T> {
    fn is_backlogged(&self) -> bool {
        self.in_transit.is_some() || !self.queue.is_empty()
    }
}

/// A cell: per-UE queues and channels, one scheduler. See the module docs.
#[derive(Debug)]
pub struct Cell<T> {
    tti: Dur,
    kind: SchedulerKind,
    scheduler: Scheduler,
    ues: Vec<Ue<T>>,
    /// TTIs `0..next_tti` are over (served or passed).
    next_tti: u64,
    /// `(ready_at, ue)` of every backlogged UE with capacity ahead: the first entry is
    /// the next TTI with a candidate, and the entries of that TTI are its candidates in
    /// UE order. A UE's entry changes only when it becomes backlogged or idle or its TTI
    /// passes, so finding the next decision is O(log UEs) instead of a scan of every UE.
    ready: BTreeSet<(u64, usize)>,
    departures: VecDeque<(usize, Departure<T>)>,
    drops: VecDeque<(usize, DroppedPacket<T>)>,
    /// Scratch outbox for one queue call, tagged with the UE afterwards.
    queue_drops: VecDeque<DroppedPacket<T>>,
    /// Scratch list of this TTI's candidates.
    candidates: Vec<Candidate>,
    stats: CellStats,
}

impl<T> Cell<T> {
    /// Builds a cell.
    ///
    /// # Panics
    /// If the specification is invalid; use [`Cell::try_new`] for user input.
    pub fn new(spec: CellSpec) -> Self {
        Self::try_new(spec).unwrap_or_else(|e| panic!("invalid cell configuration: {e}"))
    }

    /// Builds a cell whose queues, if they draw random numbers (PIE), use seeds derived
    /// from [`Cell::DEFAULT_QUEUE_SEED`]; see [`Cell::try_with_seed`].
    pub fn try_new(spec: CellSpec) -> Result<Self, CellError> {
        Self::try_with_seed(spec, Self::DEFAULT_QUEUE_SEED)
    }

    /// Seed of the queues' random streams for [`Cell::new`] and [`Cell::try_new`].
    pub const DEFAULT_QUEUE_SEED: u64 = 0;

    /// Builds a cell; UE u's queue draws its random decisions (PIE) from a stream seeded
    /// with `seed ^ u·0x9E3779B97F4A7C15` (UE 0 gets `seed` itself, as a link would).
    pub fn try_with_seed(spec: CellSpec, seed: u64) -> Result<Self, CellError> {
        spec.validate()?;
        let mut ues = Vec::with_capacity(spec.ues.len());
        for (i, ue) in spec.ues.into_iter().enumerate() {
            let queue_seed = seed ^ (i as u64).wrapping_mul(QUEUE_SEED_SPREAD);
            let queue = ue
                .queue
                .build(queue_seed)
                .map_err(|source| CellError::Queue { ue: i, source })?;
            ues.push(Ue {
                cursor: ue.channel.cursor(spec.tti),
                channel: ue.channel,
                queue,
                in_transit: None,
                stats: UeStats::default(),
                ready_at: None,
            });
        }
        Ok(Cell {
            tti: spec.tti,
            kind: spec.scheduler,
            scheduler: Scheduler::new(spec.scheduler, ues.len(), spec.pf_tc_ttis),
            candidates: Vec::with_capacity(ues.len()),
            ues,
            next_tti: 0,
            ready: BTreeSet::new(),
            departures: VecDeque::new(),
            drops: VecDeque::new(),
            queue_drops: VecDeque::new(),
            stats: CellStats::default(),
        })
    }

    /// Number of UEs.
    pub fn ue_count(&self) -> usize {
        self.ues.len()
    }

    /// TTI length.
    pub fn tti(&self) -> Dur {
        self.tti
    }

    /// The scheduler sharing the TTIs.
    pub fn scheduler(&self) -> SchedulerKind {
        self.kind
    }

    /// UE `ue`'s channel. Panics if there is no such UE.
    pub fn channel(&self, ue: usize) -> &UeChannel {
        &self.ue(ue).channel
    }

    /// Largest IP length UE `ue` accepts: 1500 on a trace channel, `None` (no limit) on a
    /// constant one.
    pub fn max_ip_len(&self, ue: usize) -> Option<u32> {
        let channel = &self.ue(ue).channel;
        channel
            .max_charged_bytes()
            .map(|max| max.saturating_sub(channel.framing_bytes()))
    }

    /// Serves every TTI that starts at or before `now`, then offers the packet to UE
    /// `ue`'s queue, charged `ip_len` plus the channel's framing.
    ///
    /// # Panics
    /// If `ue` is not a UE of the cell (a wiring error, not user input).
    pub fn enqueue(&mut self, now: Time, ue: usize, item: T, ip_len: u32) -> EnqueueResult<T> {
        let count = self.ues.len();
        assert!(
            ue < count,
            "UE {ue} does not exist: the cell has {count} UEs"
        );
        self.advance(now);
        let state = &mut self.ues[ue];
        let framing = state.channel.framing_bytes();
        let max = state.channel.max_charged_bytes();
        let packet = match Queued::charged(item, ip_len, now, framing, max) {
            Ok(packet) => packet,
            Err(item) => {
                state.stats.drops_too_big += 1;
                return EnqueueResult::Dropped(item);
            }
        };
        let result = state.queue.enqueue(now, packet, &mut self.queue_drops);
        let outcome = match result {
            Err(rejected) => {
                state.stats.drops_queue_full += 1;
                EnqueueResult::Dropped(rejected.item)
            }
            Ok(()) => {
                state.stats.packets_accepted += 1;
                EnqueueResult::Accepted
            }
        };
        self.collect_drops(ue);
        self.sync_ready(ue);
        outcome
    }

    /// Serves, in order, every TTI that starts at or before `now`.
    pub fn advance(&mut self, now: Time) {
        // `tti >= MIN_TTI`, so TTI indices stay far below u64::MAX.
        let last_due = now.as_ns() / self.tti.as_ns();
        while self.next_tti <= last_due {
            match self.find_useful_tti() {
                Some(k) if k <= last_due => {
                    self.pass_idle(k - self.next_tti);
                    self.serve_tti(k);
                }
                _ => self.pass_idle(last_due + 1 - self.next_tti),
            }
        }
    }

    /// The next departure (UE index and packet), in departure order.
    pub fn pop_departure(&mut self) -> Option<(usize, Departure<T>)> {
        self.departures.pop_front()
    }

    /// The next packet dropped after acceptance (drop-head), with its UE. Refused arrivals
    /// are returned by [`Cell::enqueue`] instead.
    pub fn pop_drop(&mut self) -> Option<(usize, DroppedPacket<T>)> {
        self.drops.pop_front()
    }

    /// The start of the next TTI in which some UE with data waiting has channel capacity
    /// (and so will be sent bytes); `None` when no UE has data or no such TTI remains.
    /// A TTI may send bytes without completing a packet.
    pub fn next_wakeup(&self) -> Option<Time> {
        #[cfg(test)]
        assert_eq!(
            self.find_useful_tti(),
            self.scan_useful_tti(),
            "next useful TTI from `ready` against a scan of every UE"
        );
        self.find_useful_tti().and_then(|k| tti_start(self.tti, k))
    }

    /// Packets waiting in UE `ue`'s queue, not counting its packet in transit.
    pub fn queued_packets(&self, ue: usize) -> usize {
        self.ue(ue).queue.len_packets()
    }

    /// Charged bytes waiting in UE `ue`'s queue, not counting its packet in transit.
    pub fn queued_bytes(&self, ue: usize) -> u64 {
        self.ue(ue).queue.len_bytes()
    }

    /// Whether UE `ue` has a packet partly sent.
    pub fn has_packet_in_transit(&self, ue: usize) -> bool {
        self.ue(ue).in_transit.is_some()
    }

    /// Bytes UE `ue`'s channel offers in the TTIs that start in `[from, to)`, used or not:
    /// what the UE would get if it had every one of those TTIs.
    pub fn capacity_bytes(&self, ue: usize, from: Time, to: Time) -> u64 {
        let tti = self.tti.as_ns();
        let first = |t: Time| Time(t.as_ns().div_ceil(tti) * tti);
        self.ue(ue).channel.bytes_between(first(from), first(to))
    }

    /// Bytes sent to UE `ue` so far (see [`UeStats::served_bytes`]).
    pub fn served_bytes(&self, ue: usize) -> u64 {
        self.ue(ue).stats.served_bytes
    }

    /// UE `ue`'s counters. Panics if there is no such UE.
    pub fn ue_stats(&self, ue: usize) -> &UeStats {
        &self.ue(ue).stats
    }

    /// The cell's counters.
    pub fn stats(&self) -> &CellStats {
        &self.stats
    }

    /// PF's average `R̄_u` in bytes per TTI; `None` under the other schedulers.
    pub fn pf_average(&self, ue: usize) -> Option<f64> {
        self.scheduler.average(ue)
    }

    fn ue(&self, ue: usize) -> &Ue<T> {
        let count = self.ues.len();
        self.ues
            .get(ue)
            .unwrap_or_else(|| panic!("UE {ue} does not exist: the cell has {count} UEs"))
    }

    /// The first TTI from `next_tti` on in which a backlogged UE has capacity.
    fn find_useful_tti(&self) -> Option<u64> {
        self.ready.first().map(|&(k, _)| k)
    }

    /// Reference for `ready`: a scan of every UE with the stateless channel answers,
    /// the first TTI from `next_tti` on in which a backlogged UE has capacity.
    #[cfg(test)]
    fn scan_useful_tti(&self) -> Option<u64> {
        self.ues
            .iter()
            .filter(|ue| ue.is_backlogged())
            .filter_map(|ue| ue.channel.next_useful_tti(self.tti, self.next_tti))
            .min()
    }

    /// Reference for the candidates of TTI `k`: a scan of every UE, in UE order.
    #[cfg(test)]
    fn scan_candidates(&self, k: u64) -> Vec<Candidate> {
        self.ues
            .iter()
            .enumerate()
            .filter(|(_, ue)| ue.is_backlogged())
            .map(|(ue, state)| Candidate {
                ue,
                bytes: state.channel.tti_bytes(self.tti, k),
            })
            .filter(|c| c.bytes > 0)
            .collect()
    }

    /// Brings UE `ue`'s entry in `ready` up to date after its queue changed or its TTI
    /// passed: an idle UE has none; a backlogged UE whose entry is missing or behind
    /// `next_tti` looks up its next useful TTI from `next_tti` (forward-only cursor).
    fn sync_ready(&mut self, ue: usize) {
        let state = &mut self.ues[ue];
        let wanted = if !state.is_backlogged() {
            None
        } else {
            match state.ready_at {
                Some(k) if k >= self.next_tti => Some(k),
                _ => state
                    .channel
                    .next_useful_tti_at(&mut state.cursor, self.tti, self.next_tti),
            }
        };
        if wanted == state.ready_at {
            return;
        }
        if let Some(k) = state.ready_at {
            self.ready.remove(&(k, ue));
        }
        if let Some(k) = wanted {
            self.ready.insert((k, ue));
        }
        state.ready_at = wanted;
    }

    /// `n` TTIs pass with no candidate.
    fn pass_idle(&mut self, n: u64) {
        self.scheduler.record_idle(n);
        self.stats.ttis += n;
        self.next_tti += n;
    }

    /// TTI `k`, which has at least one candidate.
    fn serve_tti(&mut self, k: u64) {
        let at = tti_start(self.tti, k).expect("k starts at or before `now`");
        // The candidates are the backlogged UEs whose next useful TTI is k, taken from the
        // front of `ready` in UE order, exactly the UEs with `r_u(k) > 0`.
        self.candidates.clear();
        while let Some(&(at, ue)) = self.ready.first() {
            if at != k {
                break;
            }
            self.ready.pop_first();
            let state = &mut self.ues[ue];
            state.ready_at = None;
            let bytes = state.channel.tti_bytes_at(&mut state.cursor, self.tti, k);
            debug_assert!(bytes > 0, "TTI {k} is UE {ue}'s next useful one");
            self.candidates.push(Candidate { ue, bytes });
        }
        #[cfg(test)]
        assert_eq!(
            self.candidates,
            self.scan_candidates(k),
            "TTI {k}: candidates from `ready` against a scan of every UE"
        );
        let served = self.scheduler.pick(&self.candidates).map(|ue| {
            let budget = self
                .candidates
                .iter()
                .find(|c| c.ue == ue)
                .expect("the scheduler picks a candidate")
                .bytes;
            (ue, self.serve_ue(ue, at, budget))
        });
        debug_assert!(
            served.is_some(),
            "TTI {k} was chosen for having a candidate"
        );
        self.scheduler.record(served);
        self.stats.ttis += 1;
        self.stats.ttis_scheduled += u64::from(served.is_some());
        self.next_tti = k + 1;
        // TTI k has passed for every candidate: each looks up its next one.
        for i in 0..self.candidates.len() {
            self.sync_ready(self.candidates[i].ue);
        }
    }

    /// Gives UE `ue` a TTI starting at `at` with `budget` bytes; returns the bytes sent.
    fn serve_ue(&mut self, ue: usize, at: Time, budget: u64) -> u64 {
        let state = &mut self.ues[ue];
        let mut left = budget;
        while left > 0 {
            let partial = match &mut state.in_transit {
                Some(partial) => partial,
                None => match state.queue.dequeue(at, &mut self.queue_drops) {
                    Some(packet) => state.in_transit.insert(Partial {
                        bytes_left: packet.charged_bytes,
                        packet,
                    }),
                    None => break,
                },
            };
            debug_assert!(
                partial.packet.enqueued_at < at,
                "arrivals at a TTI's start are enqueued after it is served"
            );
            let sent = left.min(u64::from(partial.bytes_left));
            // `sent <= bytes_left`, a u32.
            partial.bytes_left -= sent as u32;
            left -= sent;
            if partial.bytes_left == 0 {
                let done = state.in_transit.take().expect("set just above").packet;
                state.stats.packets_departed += 1;
                state.stats.ip_bytes_departed += u64::from(done.ip_len);
                state.stats.charged_bytes_departed += u64::from(done.charged_bytes);
                self.departures.push_back((
                    ue,
                    Departure {
                        item: done.item,
                        ip_len: done.ip_len,
                        enqueued_at: done.enqueued_at,
                        departed_at: at,
                    },
                ));
            }
        }
        let sent = budget - left;
        state.stats.ttis_scheduled += 1;
        state.stats.bytes_scheduled += budget;
        state.stats.served_bytes += sent;
        state.stats.wasted_bytes += left;
        self.collect_drops(ue);
        sent
    }

    /// Moves the drops of UE `ue`'s last queue call to the cell's outbox.
    fn collect_drops(&mut self, ue: usize) {
        let stats = &mut self.ues[ue].stats;
        for drop in self.queue_drops.drain(..) {
            match drop.reason {
                DropReason::HeadDrop => stats.drops_head += 1,
                DropReason::QueueFull => stats.drops_queue_full += 1,
                DropReason::TooBig => stats.drops_too_big += 1,
                DropReason::Aqm => stats.drops_aqm += 1,
            }
            self.drops.push_back((ue, drop));
        }
    }
}
