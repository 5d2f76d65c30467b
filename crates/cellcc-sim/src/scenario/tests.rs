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
    let dir = std::env::temp_dir().join(format!("cellcc-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("l.trace"), "1\n2\n").unwrap();
    let text = GOOD.replace("rate_mbps = 12", "trace = \"l.trace\"\nmode = \"once\"");
    let sc = Scenario::parse(&text, "exp.toml", Some(&dir)).unwrap();
    assert_eq!(sc.downlink.label, "l.trace");
    assert!(matches!(
        sc.downlink.service,
        LinkService::Trace {
            mode: TraceMode::Once,
            ..
        }
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scale_repeats_every_opportunity_of_a_trace() {
    let dir = std::env::temp_dir().join(format!("cellcc-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("l.trace"), "1\n1\n3\n").unwrap();
    let text = GOOD.replace("rate_mbps = 12", "trace = \"l.trace\"\nscale = 3");
    let sc = Scenario::parse(&text, "exp.toml", Some(&dir)).unwrap();
    let LinkService::Trace { trace, .. } = &sc.downlink.service else {
        panic!("a trace link")
    };
    assert_eq!(trace.timestamps_ms(), &[1, 1, 1, 1, 1, 1, 3, 3, 3]);
    let err = |t: &str| {
        Scenario::parse(t, "exp.toml", Some(&dir))
            .unwrap_err()
            .to_string()
    };
    assert!(err(&text.replace("scale = 3", "scale = 0"))
        .starts_with("exp.toml: downlink.scale: must be a whole number >= 1"));
    assert!(
        err(&GOOD.replace("rate_mbps = 12", "rate_mbps = 12\nscale = 2"))
            .starts_with("exp.toml: downlink.scale: applies to `trace` links only")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
