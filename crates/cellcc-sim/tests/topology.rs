//! Paths beyond the single Mahimahi bottleneck: a shared wired bottleneck before the
//! base station, cellular stages after the radio, several UEs.

use cellcc_sim::{run, Scenario, SimOutput};

fn simulate(name: &str, text: &str) -> SimOutput {
    let sc = Scenario::parse(text, name, None).unwrap_or_else(|e| panic!("{e}"));
    run(&sc)
}

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

#[test]
fn a_wired_bottleneck_before_the_base_station_limits_and_drops() {
    // C2TCP §VIII-A friendliness topology: 24 Mbit/s switch, 40 ms RTT, 1-BDP buffer
    // (24e6 × 0.04 / 8 / 1500 = 80 packets); the radio behind it is faster.
    let text =
        "duration_s = 30\n[wired]\nrate_mbps = 24\nqueue = { kind = \"droptail\", packets = 80 }\n\
        [downlink]\nrate_mbps = 100\ndelay_ms = 20\n[uplink]\nrate_mbps = 100\ndelay_ms = 20\n\
        [[flows]]\nscheme = \"cubic\"\n[[flows]]\nscheme = \"cubic\"\nstart_s = 5\n";
    let out = simulate("wired", text);
    conserved(&out);
    let all = out.summary.last().unwrap();
    println!(
        "wired 24 Mbit/s: delivered {:.2} Mbit/s, drops {}, radio queue p95 {:?} ms",
        out.link.delivered_mbps, all.drops, all.qdelay_p95_ms
    );
    assert!(out.link.delivered_mbps <= 24.0 * 1.001);
    assert!(out.link.delivered_mbps > 20.0, "Cubic fills the switch");
    assert!(all.drops > 0, "the 1-BDP switch buffer overflows");
    // The radio at 100 Mbit/s never queues more than a few packets behind a 24 Mbit/s
    // feed.
    assert!(all.qdelay_p95_ms.unwrap() < 1.0);
}

#[test]
fn flows_name_existing_ues() {
    let text =
        "duration_s = 10\n[downlink]\nrate_mbps = 10\n[[flows]]\nscheme = \"cubic\"\nue = 2\n";
    let err = Scenario::parse(text, "x.toml", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("x.toml: flows[0].ue: UE 2 does not exist"),
        "{err}"
    );
    let text = "duration_s = 10\n[wired]\nrate_mbps = 0\n[downlink]\nrate_mbps = 10\n[[flows]]\nscheme = \"cubic\"\n";
    let err = Scenario::parse(text, "x.toml", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("x.toml: wired.rate_mbps: must be a positive number"),
        "{err}"
    );
}

#[test]
fn aqm_queues_are_selectable_and_report_their_drops() {
    // C2TCP §IV-B's baseline: CUBIC over CoDel; and PIE, each with its own drops.
    for queue in [
        "{ kind = \"codel\", target_ms = 5, interval_ms = 100 }",
        "{ kind = \"codel\", target_ms = 5, interval_ms = 100, variant = \"mahimahi\" }",
        "{ kind = \"pie\", qdelay_ref_ms = 15 }",
        "{ kind = \"pie\", qdelay_ref_ms = 15, variant = \"mahimahi\" }",
    ] {
        let text = format!(
            "duration_s = 30\n[downlink]\nrate_mbps = 12\ndelay_ms = 10\nqueue = {queue}\n\
             [uplink]\nrate_mbps = 12\ndelay_ms = 10\n[[flows]]\nscheme = \"cubic\"\n"
        );
        let out = simulate("aqm", &text);
        conserved(&out);
        let row = &out.summary[0];
        println!(
            "{queue}: utilisation {:.3}, mean queueing delay {:.1} ms, drops {}",
            row.utilisation.unwrap(),
            row.qdelay_mean_ms.unwrap(),
            row.drops
        );
        assert!(row.drops > 0);
        assert!(
            row.qdelay_mean_ms.unwrap() < 60.0,
            "the AQM keeps the queue short"
        );
        assert!(row.utilisation.unwrap() > 0.8);
    }
    let bad = "duration_s = 10\n[downlink]\nrate_mbps = 12\nqueue = { kind = \"codel\", interval_ms = 0 }\n\
        [[flows]]\nscheme = \"cubic\"\n";
    let err = Scenario::parse(bad, "x.toml", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("x.toml: downlink.queue.interval_ms: codel: interval_ms"),
        "{err}"
    );
}
