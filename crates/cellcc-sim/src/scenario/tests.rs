//! Scenario loader tests: defaults, key-path errors, relative trace paths, scaling.

use super::*;

const GOOD: &str =
    "duration_s = 10\n[downlink]\nrate_mbps = 12\ndelay_ms = 10\n[[flows]]\nscheme = \"cubic\"\n";

fn err(text: &str) -> String {
    Scenario::parse(text, "exp.toml", None)
        .expect_err("scenario must be rejected")
        .to_string()
}

#[test]
fn a_minimal_scenario_gets_documented_defaults() {
    let sc = Scenario::parse(GOOD, "dir/exp.toml", None).unwrap();
    assert_eq!(sc.name, "exp");
    assert_eq!(sc.seed, 1);
    assert_eq!(sc.duration, Dur::from_secs(10));
    assert_eq!(sc.downlink.delay, Dur::from_ms(10));
    assert!(matches!(sc.downlink.queue, QueueSpec::Infinite));
    assert_eq!(sc.metrics.bin, Dur::from_ms(500));
    assert!(matches!(sc.flows[0].app, App::Bulk));
    assert_eq!(sc.uplink.label, "1000 Mbit/s");
}

#[test]
fn errors_name_the_file_and_key_path() {
    let cases: &[(&str, &str)] = &[
        ("duration_s = 10\ncolour = 1\n[downlink]\nrate_mbps = 1\n[[flows]]\nscheme = \"cubic\"\n", "exp.toml: colour: unknown field `colour`, expected one of `name`, `duration_s`"),
        (&GOOD.replace("scheme = \"cubic\"", "scheme = \"cubc\""), "exp.toml: flows[0].scheme: unknown scheme \"cubc\"; did you mean \"cubic\"? expected one of: newreno, cubic, bbr"),
        (&format!("{GOOD}params = {{ hystrat = true }}\n"), "exp.toml: flows[0].params.hystrat: unknown field `hystrat`, expected one of `beta`"),
        (&format!("{GOOD}params = {{ hystart = \"yes\" }}\n"), "exp.toml: flows[0].params.hystart: invalid type: string \"yes\", expected a boolean"),
        (&GOOD.replace("delay_ms = 10", "delay_ms = -1"), "exp.toml: downlink.delay_ms: must be a number >= 0, got -1"),
        (&GOOD.replace("rate_mbps = 12", "rate_mbps = 12\ntrace = \"x\""), "exp.toml: downlink: give either `trace` or `rate_mbps`, not both"),
        (&GOOD.replace("delay_ms = 10", "queue = { kind = \"droptail\" }"), "exp.toml: downlink.queue: droptail queue needs a limit: give `packets` and/or `bytes`"),
        (&GOOD.replace("delay_ms = 10", "queue = { kind = \"red\" }"), "exp.toml: downlink.queue.kind: unknown variant `red`, expected one of `infinite`, `droptail`, `drophead`, `codel`, `pie`"),
        (&GOOD.replace("delay_ms = 10", "queue = { kind = \"droptail\", packets = 10, pkts = 3 }"), "exp.toml: downlink.queue: unknown field `pkts`"),
        (&GOOD.replace("delay_ms = 10", "loss = 1.5"), "exp.toml: downlink.loss: must be a probability in [0, 1), got 1.5"),
        (&GOOD.replace("rate_mbps = 12", "trace = \"missing.trace\""), "exp.toml: downlink.trace: "),
        (&format!("{GOOD}app = {{ bytes = 0 }}\n"), "exp.toml: flows[0].app.bytes: got 0; expected \"bulk\" or { bytes = N } with N >= 1"),
        (&format!("{GOOD}start_s = 20\n"), "exp.toml: flows[0].start_s: starts at 20 s, not before the end of the run (10 s)"),
        (&GOOD.replace("duration_s = 10", "duration_s = 0"), "exp.toml: duration_s: must be a positive number, got 0"),
        (&format!("{GOOD}[tcp]\nmss = 9000\n"), "exp.toml: tcp.mss: must be in 64..=1448"),
        ("duration_s = 10\n[downlink\n", "exp.toml: line 2: invalid TOML"),
        (&GOOD.replace("scheme = \"cubic\"", "scheme = \"bbr\"\nparams = { high_gain = 5000 }"), "exp.toml: flows[0].params.high_gain: "),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .map(|(text, want)| (err(text), want))
        .filter(|(got, want)| !got.starts_with(*want))
        .map(|(got, want)| format!("\n got: {got}\nwant: {want}…"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.concat());
}

#[test]
fn trace_paths_resolve_against_the_scenario_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("l.trace"), "1\n2\n").unwrap();
    let text = GOOD.replace("rate_mbps = 12", "trace = \"l.trace\"\nmode = \"once\"");
    let sc = Scenario::parse(&text, "exp.toml", Some(dir)).unwrap();
    assert_eq!(sc.downlink.label, "l.trace");
    assert!(matches!(
        sc.downlink.service,
        LinkService::Trace {
            mode: TraceMode::Once,
            ..
        }
    ));
}

#[test]
fn scale_repeats_every_opportunity_of_a_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("l.trace"), "1\n1\n3\n").unwrap();
    let text = GOOD.replace("rate_mbps = 12", "trace = \"l.trace\"\nscale = 3");
    let sc = Scenario::parse(&text, "exp.toml", Some(dir)).unwrap();
    let LinkService::Trace { trace, .. } = &sc.downlink.service else {
        panic!("a trace link")
    };
    assert_eq!(trace.timestamps_ms(), &[1, 1, 1, 1, 1, 1, 3, 3, 3]);
    let err = |t: &str| {
        Scenario::parse(t, "exp.toml", Some(dir))
            .unwrap_err()
            .to_string()
    };
    assert!(err(&text.replace("scale = 3", "scale = 0"))
        .starts_with("exp.toml: downlink.scale: must be a whole number >= 1"));
    assert!(
        err(&GOOD.replace("rate_mbps = 12", "rate_mbps = 12\nscale = 2"))
            .starts_with("exp.toml: downlink.scale: applies to `trace` links only")
    );
}

/// The reproductions of issue 14 (hostile input) and the other bounds of
/// `docs/scenarios.md` ("Limits"): each is refused at load time, naming its key.
#[test]
fn values_beyond_the_limits_are_refused_naming_their_key() {
    let flow = "[[flows]]\nscheme = \"cubic\"\n";
    let sched = "[scheduling]\npreset = \"lte-fdd-sr10\"\n";
    let cases: Vec<(String, &str)> = vec![
        (format!("{GOOD}[metrics]\nbin_ms = 1e-300\n"), "exp.toml: metrics.bin_ms: 1e-300 is below the limit 0.001 ms"),
        (format!("{GOOD}[metrics]\nbin_ms = 1e-6\n"), "exp.toml: metrics.bin_ms: 1e-6 is below"),
        (GOOD.replace("rate_mbps = 12", "rate_mbps = 1e-7"), "exp.toml: downlink.rate_mbps: 1e-7 is below the limit 0.001 Mbit/s"),
        (format!("{GOOD}[uplink]\nrate_mbps = 4e-7\n"), "exp.toml: uplink.rate_mbps: 4e-7 is below"),
        (format!("{GOOD}[wired]\nrate_mbps = 1e-7\n"), "exp.toml: wired.rate_mbps: 1e-7 is below"),
        (GOOD.replace("rate_mbps = 12", "rate_mbps = 1e12"), "exp.toml: downlink.rate_mbps: 1000000000000 is above"),
        (GOOD.replace("duration_s = 10", "duration_s = 1e7"), "exp.toml: duration_s: 10000000 is above the limit 604800 s"),
        (GOOD.replace("duration_s = 10", "duration_s = 1e308"), "exp.toml: duration_s: 1e308 is above"),
        (GOOD.replace("delay_ms = 10", "delay_ms = 1e300"), "exp.toml: downlink.delay_ms: 1e300 is above the limit 60000 ms"),
        (format!("{GOOD}{sched}grant_delay_ms = 4294967296\n"), "exp.toml: scheduling.grant_delay_ms: 4294967296 is above the limit 60000 ms"),
        (format!("{GOOD}{sched}sr_period_ms = 1e-6\n"), "exp.toml: scheduling.sr_period_ms: 1e-6 is below the limit 0.0625 ms"),
        (format!("{GOOD}{sched}tti_ms = 0.001\n"), "exp.toml: scheduling.tti_ms: "),
        (format!("duration_s = 1\n[cell]\ntti_ms = 0.001\n[[cell.ues]]\nrate_mbps = 10\n{flow}"), "exp.toml: cell.tti_ms: "),
        (format!("duration_s = 1\n[cell]\n[[cell.ues]]\nrate_mbps = 1e-7\n{flow}"), "exp.toml: cell.ues[0].rate_mbps: 1e-7 is below"),
        (format!("duration_s = 1\n[downlink]\nrate_mbps = 10\n{}", flow.repeat(1001)), "exp.toml: flows: 1001 flows is above the limit 1000"),
        (format!("{GOOD}[[background]]\nsource = {{ kind = \"short_flows\", rate_per_s = 1e9, size = {{ kind = \"constant\", value = 1000 }} }}\n"), "exp.toml: background[0].source.rate_per_s: gives 1000000000 short flows per second, above the limit 1000"),
        (format!("{GOOD}[[background]]\nsource = {{ kind = \"short_flows\", rate_per_s = 900, size = {{ kind = \"constant\", value = 1000 }} }}\n"), "exp.toml: background[0].source: the run would need about"),
        (format!("{GOOD}[[background]]\nsource = {{ kind = \"cbr\", rate_mbps = 1e-7 }}\n"), "exp.toml: background[0].source.rate_mbps: "),
        (GOOD.replace("duration_s = 10", "duration_s = 604800").replace("delay_ms = 10", "[metrics]\nbin_ms = 1"), "exp.toml: metrics.bin_ms: the run would need about"),
        (format!("{GOOD}[tcp]\nts_granularity_ms = 1e-300\n"), "exp.toml: tcp.ts_granularity_ms: 1e-300 is below"),
        (format!("{GOOD}[tcp]\ndelack_ms = 1e300\n"), "exp.toml: tcp.delack_ms: 1e300 is above"),
        (format!("{GOOD}[tcp]\ninit_cwnd = 4000000000\n"), "exp.toml: tcp.init_cwnd: 4000000000 is above the limit 10000"),
        (format!("{GOOD}[tcp]\nwmem = [4096, 16384, 1e300]\n"), "exp.toml: tcp.wmem: 1e300 is outside 4096..=1073741824 bytes"),
        (format!("{GOOD}[tcp]\nrmem = [8192, 131072, 65536]\n"), "exp.toml: tcp.rmem: must be [minimum, initial, maximum] in that order"),
        (format!("{GOOD}[tcp]\nrmem = [8192, 131072.5, 6291456]\n"), "exp.toml: tcp.rmem: 131072.5 is not a whole number of bytes"),
        (GOOD.replace("delay_ms = 10", "jitter = { dist = \"exponential\", mean_ms = 1e9 }"), "exp.toml: downlink.jitter.mean_ms: 1000000000 is above"),
        (GOOD.replace("delay_ms = 10", "outages = [{ start_s = 1e9, duration_s = 1 }]"), "exp.toml: downlink.outages[0].start_s: 1000000000 is above"),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .map(|(text, want)| (err(text), want))
        .filter(|(got, want)| !got.starts_with(*want))
        .map(|(got, want)| format!("\n got: {got}\nwant: {want}…"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.concat());
}

#[test]
fn scale_is_bounded_before_the_trace_is_copied() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("t.down"), "10\n20\n30\n").unwrap();
    let text = |k: u64| {
        format!("duration_s = 1\n[downlink]\ntrace = \"t.down\"\nscale = {k}\n[[flows]]\nscheme = \"cubic\"\n")
    };
    let parse = |k| Scenario::parse(&text(k), "exp.toml", Some(dir));
    for k in [101, 1000, 4_294_967_295] {
        let e = parse(k).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("exp.toml: downlink.scale: {k} is above the limit 100")
        );
    }
    assert!(parse(100).is_ok());
}

#[test]
fn a_trace_must_be_a_regular_file() {
    for path in ["/dev/zero", "."] {
        let text = format!(
            "duration_s = 1\n[downlink]\ntrace = \"{path}\"\n[[flows]]\nscheme = \"cubic\"\n"
        );
        let e = err(&text);
        assert!(
            e.contains("downlink.trace: ") && e.contains("not a regular file"),
            "{e}"
        );
    }
}

#[test]
fn a_hand_built_scenario_that_breaks_a_check_is_an_error_not_a_panic() {
    let mut sc = Scenario::parse(GOOD, "exp.toml", None).unwrap();
    sc.metrics.bin = Dur::ZERO;
    let e = crate::Simulation::new(&sc)
        .err()
        .expect("a zero bin is refused");
    assert!(e.to_string().contains("metrics.bin_ms"), "{e}");
    let mut sc = Scenario::parse(GOOD, "exp.toml", None).unwrap();
    sc.downlink.service = LinkService::Constant {
        rate: Bandwidth::from_bps(0),
        framing_bytes: 0,
    };
    let e = crate::Simulation::new(&sc)
        .err()
        .expect("a zero rate is refused");
    assert!(e.to_string().contains("downlink"), "{e}");
}

/// Values quoted from the user's text (an unknown variant, the scenario's name) may hold
/// newlines and other control characters; the error still prints as one line.
#[test]
fn control_characters_quoted_in_an_error_are_escaped_onto_one_line() {
    let text = GOOD.replace("rate_mbps = 12", "trace = \"t\"\nmode = \"x\\n\\u0005y\"");
    let e = Scenario::parse(&text, "a\nb.toml", None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "a\\nb.toml: downlink.mode: unknown variant `x\\n\\u{5}y`, expected `loop` or `once` (line 4)"
    );
    assert_eq!(super::one_line("plain ünïcode"), "plain ünïcode");
}

#[test]
fn scenario_text_and_files_beyond_4_mib_or_not_regular_are_refused() {
    let limit = super::limits::MAX_SCENARIO_BYTES;
    let padded = |n: usize| format!("{GOOD}{}", "#".repeat(n - GOOD.len()));
    assert!(Scenario::parse(&padded(limit), "exp.toml", None).is_ok());
    assert_eq!(
        err(&padded(limit + 1)),
        format!(
            "exp.toml: file: the scenario text is {} bytes, above the limit {limit} (4 MiB)",
            limit + 1
        )
    );
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("big.toml");
    std::fs::write(&big, padded(limit + 10)).unwrap();
    let e = Scenario::from_file(&big).unwrap_err();
    assert_eq!(
        (e.location.as_str(), e.message.as_str()),
        (
            "file",
            format!(
                "the scenario file is {} bytes, above the limit {limit} (4 MiB)",
                limit + 10
            )
            .as_str()
        )
    );
    for path in ["/dev/zero", "."] {
        let e = Scenario::from_file(Path::new(path)).unwrap_err();
        assert_eq!(e.to_string(), format!("{path}: file: not a regular file"));
    }
}
