//! Uplink data flows (`direction = "up"`): the sender sits at the UE, its data crosses
//! the uplink's queue and link, its ACKs the downlink's; both share the queues with the
//! other flows' packets of that direction (PropRate, CoNEXT 2017, Fig. 14: a
//! downstream flow whose ACKs wait behind an upstream CUBIC flow's data).

mod common;

use cellcc_sim::metrics::SummaryRow;
use cellcc_sim::SimOutput;
use common::{conserved, parse_error, simulate};

/// A flow's mean ACK path, ms: its mean RTT less its data's mean one-way delay.
fn ack_path(r: &SummaryRow) -> f64 {
    r.rtt_mean_ms.unwrap() - r.owd_mean_ms.unwrap()
}

fn row(out: &SimOutput, flow: i64) -> &SummaryRow {
    out.summary
        .iter()
        .find(|r| r.flow == flow)
        .unwrap_or_else(|| panic!("no summary row for flow {flow}"))
}

/// Constant links: `down`/`up` Mbit/s, 20 ms each way, drop-tail queues of `down_q` and
/// `up_q` packets; then the flows (`[[flows]]` tables).
fn constant_links(down: f64, up: f64, down_q: u32, up_q: u32, flows: &str) -> String {
    format!(
        "duration_s = 40\nseed = 7\n\
         [downlink]\nrate_mbps = {down}\ndelay_ms = 20\nqueue = {{ kind = \"droptail\", packets = {down_q} }}\n\
         [uplink]\nrate_mbps = {up}\ndelay_ms = 20\nqueue = {{ kind = \"droptail\", packets = {up_q} }}\n\
         {flows}"
    )
}

#[test]
fn an_uplink_cubic_flow_gets_the_uplink_rate_and_fills_the_uplink_queue() {
    // 10 Mbit/s up, 50 down: the uplink is the bottleneck of an upstream flow. A full
    // 200-packet queue holds 200 × 1500 × 8 / 10e6 = 240 ms.
    let text = constant_links(
        50.0,
        10.0,
        1000,
        200,
        "[[flows]]\nscheme = \"cubic\"\ndirection = \"up\"\n",
    );
    let out = simulate("uplink-cubic", &text);
    conserved("uplink-cubic", &out);
    let up = row(&out, 0);
    println!(
        "uplink cubic: {:.2} Mbit/s, util {:?}, owd p95 {:?} ms, qdelay p95 {:?} ms, rtt mean {:?} ms, queue drops {}",
        up.throughput_mbps, up.utilisation, up.owd_p95_ms, up.qdelay_p95_ms, up.rtt_mean_ms, up.drops_queue
    );
    assert_eq!(up.flow_direction, "up");
    // Goodput: the link rate less headers (1448 of every 1500 bytes), less slow start.
    assert!(up.throughput_mbps > 9.0, "{}", up.throughput_mbps);
    assert!(up.throughput_mbps <= 10.0 * 1448.0 / 1500.0);
    assert!(up.utilisation.unwrap() > 0.93, "{:?}", up.utilisation);
    // CUBIC fills the uplink buffer: data waits most of 240 ms there, and overflows it.
    assert!(up.qdelay_p95_ms.unwrap() > 200.0, "{:?}", up.qdelay_p95_ms);
    assert!(up.owd_p95_ms.unwrap() > 220.0, "{:?}", up.owd_p95_ms);
    assert!(up.drops_queue > 0);
    // Its ACKs cross the uncongested downlink: the RTT is the uplink's queueing plus
    // 40 ms of propagation, not more.
    let rtt = up.rtt_mean_ms.unwrap();
    assert!(rtt > 150.0 && rtt < 40.0 + 240.0 + 10.0, "{rtt}");
    // The uplink flows' aggregate row; the downlink aggregate carried no data.
    let agg = row(&out, -3);
    assert_eq!(agg.flow_direction, "up");
    assert_eq!(agg.app_bytes, up.app_bytes);
    assert_eq!(row(&out, -1).app_bytes, 0);
    assert_eq!(out.link.delivered_mbps, 0.0);
}

/// A downstream flow (`flow`: a `[[flows]]` body) over 20/2 Mbit/s links, alone or with
/// an upstream CUBIC flow saturating the 2 Mbit/s uplink (300-packet buffer: 1.8 s of
/// data when full; the downlink's 250 packets hold 150 ms). The receive buffers are
/// fixed at 32 MB (no autotuning), so that no receive window binds: the subject is the
/// uplink queue. (With Linux's autotuning the windows shape both flows too: CUBIC then
/// keeps 0.54 of its throughput instead of 0.39.)
fn downstream(name: &str, flow: &str, upstream: bool) -> SimOutput {
    let mut flows = format!("[[flows]]\n{flow}");
    if upstream {
        flows += "[[flows]]\nscheme = \"cubic\"\ndirection = \"up\"\n";
    }
    flows += "[tcp]\nautotune = false\nrmem = [4096, 33554432, 33554432]\n";
    let text = constant_links(20.0, 2.0, 250, 300, &flows);
    let out = simulate(&format!("{name}-upstream-{upstream}"), &text);
    conserved(&format!("{name}-upstream-{upstream}"), &out);
    out
}

/// The downstream flow's throughput with the upstream flow ÷ alone, after checking
/// that the upstream flow congests the uplink and delays the downstream ACKs.
fn kept_throughput(name: &str, flow: &str) -> f64 {
    let alone = downstream(name, flow, false);
    let congested = downstream(name, flow, true);
    let (a, c, up) = (row(&alone, 0), row(&congested, 0), row(&congested, 1));
    println!(
        "{name}: alone {:.2} Mbit/s, RTT {:.0} ms | with upstream CUBIC {:.2} Mbit/s, RTT {:.0} ms, OWD {:.0} ms | upstream {:.2} Mbit/s",
        a.throughput_mbps,
        a.rtt_mean_ms.unwrap(),
        c.throughput_mbps,
        c.rtt_mean_ms.unwrap(),
        c.owd_mean_ms.unwrap(),
        up.throughput_mbps,
    );
    assert_eq!((c.flow_direction, up.flow_direction), ("down", "up"));
    // The upstream flow takes most of the uplink (the rest carries the downstream ACKs).
    assert!(up.throughput_mbps > 1.5, "{name}: {}", up.throughput_mbps);
    // The downstream ACKs wait behind its data in the uplink queue.
    assert!(
        c.rtt_mean_ms.unwrap() > a.rtt_mean_ms.unwrap() + 200.0,
        "{name}: RTT {:?} with the upstream flow, {:?} alone",
        c.rtt_mean_ms,
        a.rtt_mean_ms
    );
    // The data direction itself is not congested by the upstream flow: its one-way
    // delay does not grow.
    assert!(
        c.owd_mean_ms.unwrap() < a.owd_mean_ms.unwrap() + 20.0,
        "{name}: OWD {:?} vs {:?}",
        c.owd_mean_ms,
        a.owd_mean_ms
    );
    c.throughput_mbps / a.throughput_mbps
}

#[test]
fn an_upstream_cubic_flow_starves_ack_clocked_cubic_but_not_rate_based_proprate() {
    // CUBIC sends when ACKs return: ACKs delayed and dropped in the full uplink queue
    // cut its downstream throughput.
    let cubic = kept_throughput("cubic", "scheme = \"cubic\"\n");
    assert!(cubic < 0.5, "CUBIC kept {cubic:.2} of its throughput");
    // PropRate paces at the receive rate it reads from the receiver's timestamps, which
    // the uplink queue does not distort (PropRate §6, Fig. 14): with a window that
    // admits the longer RTT, it keeps most of its throughput.
    let loose = kept_throughput(
        "proprate-m-cwnd-gain-5",
        "scheme = \"proprate-m\"\nparams = { cwnd_gain = 5 }\n",
    );
    assert!(loose > 0.8, "PropRate (cwnd_gain 5) kept {loose:.2}");
    // Its default window cap, ρ·(base RTT + D_max) (docs/algorithms/proprate.md,
    // difference 7), is sized from the base RTT: it binds once ACKs take 300+ ms longer,
    // and PropRate is then as window-limited as CUBIC.
    let capped = kept_throughput("proprate-m", "scheme = \"proprate-m\"\n");
    assert!(capped < 0.5, "PropRate (default cap) kept {capped:.2}");
}

#[test]
fn runs_with_uplink_flows_are_deterministic() {
    let text = |seed: u64| {
        format!(
            "duration_s = 20\nseed = {seed}\n\
             [downlink]\nrate_mbps = 12\ndelay_ms = 20\nloss = 0.01\nqueue = {{ kind = \"droptail\", packets = 300 }}\n\
             [uplink]\nrate_mbps = 3\ndelay_ms = 20\nloss = 0.01\nqueue = {{ kind = \"droptail\", packets = 100 }}\n\
             [[flows]]\nscheme = \"cubic\"\n\
             [[flows]]\nscheme = \"bbr\"\ndirection = \"up\"\nstart_s = 2\n\
             [[flows]]\nscheme = \"cubic\"\ndirection = \"up\"\nstart_s = 4\n"
        )
    };
    let json = |out: &SimOutput| {
        (
            serde_json::to_string(&out.summary).unwrap(),
            serde_json::to_string(&out.timeseries).unwrap(),
            out.events,
        )
    };
    let a = simulate("det-a", &text(3));
    let b = simulate("det-b", &text(3));
    conserved("det-a", &a);
    assert_eq!(json(&a), json(&b), "same scenario and seed, same output");
    // Random loss on both directions: another seed draws other losses.
    let c = simulate("det-c", &text(4));
    assert_ne!(json(&a).0, json(&c).0);
}

#[test]
fn an_uplink_flow_in_a_cell_belongs_to_its_ue() {
    // Two UEs with their own uplinks (4 Mbit/s, 100 packets: 300 ms when full). UE 0
    // downloads with BBR (which keeps its cell queue short); an upstream CUBIC flow runs
    // on UE 1, then on UE 0. Its data takes its
    // UE's uplink and its ACKs come down through its UE's queue in the cell.
    let run = |up_ue: u32| {
        let text = format!(
            "duration_s = 20\n\
             [cell]\nscheduler = \"rr\"\n\
             [[cell.ues]]\nrate_mbps = 10\nqueue = {{ kind = \"droptail\", packets = 100 }}\n\
             [[cell.ues]]\nrate_mbps = 10\nqueue = {{ kind = \"droptail\", packets = 100 }}\n\
             [downlink]\ndelay_ms = 20\n\
             [uplink]\nrate_mbps = 4\ndelay_ms = 20\nqueue = {{ kind = \"droptail\", packets = 100 }}\n\
             [[flows]]\nscheme = \"bbr\"\nue = 0\n\
             [[flows]]\nscheme = \"cubic\"\ndirection = \"up\"\nue = {up_ue}\n"
        );
        let out = simulate(&format!("cell-uplink-ue{up_ue}"), &text);
        conserved(&format!("cell-uplink-ue{up_ue}"), &out);
        out
    };
    let (other, same) = (run(1), run(0));
    for (ue, out) in [(1, &other), (0, &same)] {
        let (down, up) = (row(out, 0), row(out, 1));
        println!(
            "upstream on UE {ue}: down {:.2} Mbit/s RTT {:.0} ms, up {:.2} Mbit/s RTT {:.0} ms",
            down.throughput_mbps,
            down.rtt_mean_ms.unwrap(),
            up.throughput_mbps,
            up.rtt_mean_ms.unwrap()
        );
        assert!(up.throughput_mbps > 3.0, "{}", up.throughput_mbps);
    }
    // On another UE the upstream flow leaves UE 0's uplink, and its ACKs, alone: on
    // the same UE the downstream ACK path (RTT less the data's one-way delay) grows by
    // more than 100 ms.
    let (alone, shared) = (row(&other, 0), row(&same, 0));
    assert!(
        ack_path(shared) > ack_path(alone) + 100.0,
        "downstream ACK path {:.0} ms with the upstream flow on its UE, {:.0} ms on the other",
        ack_path(shared),
        ack_path(alone)
    );
    assert!(alone.throughput_mbps > 6.0, "{}", alone.throughput_mbps);
}

#[test]
fn a_flow_direction_other_than_up_or_down_is_rejected_with_its_key() {
    let text = "duration_s = 10\n[downlink]\nrate_mbps = 10\n\
        [[flows]]\nscheme = \"cubic\"\n[[flows]]\nscheme = \"cubic\"\ndirection = \"sideways\"\n";
    let err = parse_error(text);
    assert!(err.starts_with("x.toml: flows[1].direction: "), "{err}");
    assert!(err.contains("`down`") && err.contains("`up`"), "{err}");
}

mod random {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random mixes of downlink and uplink flows over lossy links with small queues
        /// (drop-tail or drop-head) in both directions, stopped while packets of both
        /// kinds are still on their way in both directions: every byte reaches its
        /// application at most once (all of it when the flow completes), every packet
        /// is delivered, dropped or still in the network, and a rerun is identical.
        #[test]
        fn mixed_directions_deliver_once_and_conserve_packets(
            down_mbps in 1u32..30,
            up_mbps in 1u32..30,
            down_q in 4u32..200,
            up_q in 4u32..200,
            head in any::<bool>(),
            loss in prop_oneof![Just(0.0), 0.0f64..0.03],
            flows in prop::collection::vec(
                (prop::sample::select(vec!["cubic", "bbr", "proprate-m"]), any::<bool>(), 0u32..20, 1u64..30_000_000),
                1..4,
            ),
            seed in 0u64..1_000_000,
        ) {
            let kind = if head { "drophead" } else { "droptail" };
            let loss = (loss * 1000.0).round() / 1000.0;
            let mut text = format!(
                "duration_s = 4\nseed = {seed}\n\
                 [downlink]\nrate_mbps = {down_mbps}\ndelay_ms = 15\nloss = {loss}\nqueue = {{ kind = \"{kind}\", packets = {down_q} }}\n\
                 [uplink]\nrate_mbps = {up_mbps}\ndelay_ms = 5\nloss = {loss}\nqueue = {{ kind = \"{kind}\", packets = {up_q} }}\n"
            );
            for (scheme, up, start, bytes) in &flows {
                let dir = if *up { "up" } else { "down" };
                text += &format!(
                    "[[flows]]\nscheme = \"{scheme}\"\ndirection = \"{dir}\"\nstart_s = {}\napp = {{ bytes = {bytes} }}\n",
                    f64::from(*start) / 10.0
                );
            }
            let sc = cellcc_sim::Scenario::parse(&text, "prop.toml", None)
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            let out = cellcc_sim::run(&sc).expect("the scenario runs");
            for (i, (_, up, _, bytes)) in flows.iter().enumerate() {
                let r = row(&out, i as i64);
                prop_assert_eq!(r.flow_direction, if *up { "up" } else { "down" });
                prop_assert!(r.app_bytes <= *bytes, "flow {} delivered {} > {}", i, r.app_bytes, bytes);
                if r.completion_s.is_some() {
                    prop_assert_eq!(r.app_bytes, *bytes);
                }
            }
            let c = out.conservation;
            prop_assert_eq!(c.data_sent, c.data_delivered + c.data_dropped + c.data_in_network, "{:?}", c);
            prop_assert_eq!(c.acks_sent, c.acks_delivered + c.acks_dropped + c.acks_in_network, "{:?}", c);
            let again = cellcc_sim::run(&sc).expect("the scenario runs");
            prop_assert_eq!(
                serde_json::to_string(&out.summary).unwrap(),
                serde_json::to_string(&again.summary).unwrap()
            );
        }
    }
}
