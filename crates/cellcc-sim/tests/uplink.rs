//! Uplink data flows (`direction = "up"`): the sender sits at the UE, its data crosses
//! the uplink's queue and link, its ACKs the downlink's; both share the queues with the
//! other flows' packets of that direction (PropRate, CoNEXT 2017, Fig. 14: a
//! downstream flow whose ACKs wait behind an upstream CUBIC flow's data).

mod common;

use cellcc_sim::metrics::SummaryRow;
use cellcc_sim::SimOutput;
use common::simulate;

fn conserved(out: &SimOutput) {
    let c = out.conservation;
    assert_eq!(
        c.data_sent,
        c.data_delivered + c.data_dropped + c.data_in_network,
        "{c:?}"
    );
    assert_eq!(
        c.acks_sent,
        c.acks_delivered + c.acks_dropped + c.acks_in_network,
        "{c:?}"
    );
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
    conserved(&out);
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

/// A downstream flow of `scheme` over 20/2 Mbit/s links, alone or with an upstream
/// CUBIC flow saturating the 2 Mbit/s uplink (300-packet buffer: 1.8 s when full).
fn downstream(scheme: &str, upstream: bool) -> SimOutput {
    let mut flows = format!("[[flows]]\nscheme = \"{scheme}\"\n");
    if upstream {
        flows += "[[flows]]\nscheme = \"cubic\"\ndirection = \"up\"\n";
    }
    let text = constant_links(20.0, 2.0, 2000, 300, &flows);
    let out = simulate(&format!("down-{scheme}-up-{upstream}"), &text);
    conserved(&out);
    out
}

#[test]
fn an_upstream_cubic_flow_delays_the_acks_of_a_downstream_flow() {
    let mut kept = Vec::new();
    for scheme in ["cubic", "proprate-m"] {
        let alone = downstream(scheme, false);
        let congested = downstream(scheme, true);
        let (a, c) = (row(&alone, 0), row(&congested, 0));
        let up = row(&congested, 1);
        println!(
            "{scheme}: alone {:.2} Mbit/s rtt {:.0} ms owd {:.0} ms | with upstream cubic {:.2} Mbit/s rtt {:.0} ms owd {:.0} ms | upstream {:.2} Mbit/s",
            a.throughput_mbps,
            a.rtt_mean_ms.unwrap(),
            a.owd_mean_ms.unwrap(),
            c.throughput_mbps,
            c.rtt_mean_ms.unwrap(),
            c.owd_mean_ms.unwrap(),
            up.throughput_mbps,
        );
        assert_eq!((c.flow_direction, up.flow_direction), ("down", "up"));
        // The upstream flow saturates the uplink.
        assert!(up.throughput_mbps > 1.7, "{}", up.throughput_mbps);
        // The downstream ACKs wait behind its data: the RTT grows by most of the
        // uplink buffer's 1.8 s.
        assert!(
            c.rtt_mean_ms.unwrap() > a.rtt_mean_ms.unwrap() + 500.0,
            "{scheme}: {:?} vs {:?}",
            c.rtt_mean_ms,
            a.rtt_mean_ms
        );
        kept.push(c.throughput_mbps / a.throughput_mbps);
    }
    let (cubic, proprate) = (kept[0], kept[1]);
    // ACK-clocked CUBIC loses downstream throughput; rate-based PropRate keeps more.
    assert!(cubic < 0.8, "CUBIC kept {cubic:.2} of its throughput");
    assert!(
        proprate > cubic,
        "PropRate kept {proprate:.2}, CUBIC {cubic:.2}"
    );
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
    conserved(&a);
    assert_eq!(json(&a), json(&b), "same scenario and seed, same output");
    // Random loss on both directions: another seed draws other losses.
    let c = simulate("det-c", &text(4));
    assert_ne!(json(&a).0, json(&c).0);
}

#[test]
fn an_uplink_flow_in_a_cell_belongs_to_its_ue() {
    // Two UEs; UE 1 sends upstream, UE 0 downloads. The upstream data takes UE 1's
    // uplink and its ACKs come down through UE 1's queue in the cell.
    let text = "duration_s = 20\n\
        [cell]\nscheduler = \"rr\"\n\
        [[cell.ues]]\nrate_mbps = 10\n[[cell.ues]]\nrate_mbps = 10\n\
        [downlink]\ndelay_ms = 20\n\
        [uplink]\nrate_mbps = 4\ndelay_ms = 20\nqueue = { kind = \"droptail\", packets = 100 }\n\
        [[flows]]\nscheme = \"cubic\"\nue = 0\n\
        [[flows]]\nscheme = \"cubic\"\ndirection = \"up\"\nue = 1\n";
    let out = simulate("cell-uplink", text);
    conserved(&out);
    let (down, up) = (row(&out, 0), row(&out, 1));
    println!(
        "cell: down {:.2} Mbit/s rtt {:?}, up {:.2} Mbit/s rtt {:?}",
        down.throughput_mbps, down.rtt_mean_ms, up.throughput_mbps, up.rtt_mean_ms
    );
    assert!(up.throughput_mbps > 3.5, "{}", up.throughput_mbps);
    assert!(down.throughput_mbps > 4.0, "{}", down.throughput_mbps);
    // UE 0's ACKs have UE 0's uplink to themselves: its RTT stays near 40 ms plus its
    // own downlink queueing, unlike the upstream flow's (100 packets at 4 Mbit/s).
    assert!(up.rtt_mean_ms.unwrap() > 200.0, "{:?}", up.rtt_mean_ms);
}

#[test]
fn a_flow_direction_other_than_up_or_down_is_rejected_with_its_key() {
    let text = "duration_s = 10\n[downlink]\nrate_mbps = 10\n\
        [[flows]]\nscheme = \"cubic\"\n[[flows]]\nscheme = \"cubic\"\ndirection = \"sideways\"\n";
    let err = cellcc_sim::Scenario::parse(text, "x.toml", None)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("x.toml: flows[1].direction: "), "{err}");
    assert!(err.contains("`down`") && err.contains("`up`"), "{err}");
}
