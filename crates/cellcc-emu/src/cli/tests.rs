//! Tests of the command line: parsing, validation and the error messages.

use super::*;

fn parse(args: &[&str]) -> Result<EmuArgs, clap::Error> {
    EmuArgs::try_parse_from(std::iter::once("cellcc-emu").chain(args.iter().copied()))
}

#[test]
fn mm_link_shape_parses() {
    let a = parse(&[
        "--delay",
        "20",
        "--uplink",
        "up",
        "--downlink",
        "down",
        "--downlink-queue=droptail",
        "--downlink-queue-args=packets=400",
        "--",
        "ping",
        "-c",
        "1",
    ])
    .unwrap();
    assert_eq!(a.delay, Dur::from_ms(20));
    assert_eq!(a.downlink_queue, QueueKind::Droptail);
    assert_eq!(a.uplink_queue, QueueKind::Infinite);
    assert_eq!(a.command, ["ping", "-c", "1"]);
    assert_eq!(a.server_addr, Ipv4Addr::new(10, 64, 0, 1));
    assert_eq!(a.client_addr, Ipv4Addr::new(10, 64, 0, 2));
}

#[test]
fn fractional_delay_and_bad_numbers() {
    let a = parse(&["--delay", "2.5", "--uplink", "u", "--downlink", "d"]).unwrap();
    assert_eq!(a.delay, Dur::from_us(2500));
    assert!(parse(&["--delay", "-1", "--uplink", "u", "--downlink", "d"]).is_err());
    assert!(parse(&["--delay", "abc", "--uplink", "u", "--downlink", "d"]).is_err());
    let e = parse(&["--uplink-loss", "1.5", "--uplink", "u", "--downlink", "d"]).unwrap_err();
    assert!(e.to_string().contains("--uplink-loss"), "{e}");
    assert_eq!(e.exit_code(), EXIT_USAGE);
}

#[test]
fn missing_capacity_is_a_usage_error() {
    let e = parse(&["--uplink-rate-mbps", "5"])
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--downlink: missing the downlink capacity"),
        "{e}"
    );
}

#[test]
fn constant_rates_replace_traces_per_direction() {
    let a = parse(&["--rate-mbps", "24"]).unwrap().validate().unwrap();
    for dir in [&a.uplink, &a.downlink] {
        let Capacity::Rate(rate) = dir.capacity else {
            panic!("expected a rate");
        };
        assert_eq!(rate.bits_per_sec, 24_000_000);
        assert_eq!(dir.capacity.label(), "24 Mbit/s");
        // The simulator's constant link: no framing added to the IP length.
        assert_eq!(dir.capacity.service(TraceMode::Loop).framing_bytes(), 0);
    }
    let a = parse(&["--uplink-rate-mbps", "0.5", "--downlink-rate-mbps", "100"])
        .unwrap()
        .validate()
        .unwrap();
    assert_eq!(a.uplink.capacity.label(), "0.5 Mbit/s");
    assert_eq!(a.downlink.capacity.label(), "100 Mbit/s");
}

#[test]
fn a_trace_and_a_rate_for_one_direction_are_refused() {
    let dir = std::env::temp_dir().join(format!("cellcc-emu-rate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.trace");
    std::fs::write(&trace, "1\n").unwrap();
    let t = trace.to_str().unwrap();
    let msg = |args: &[&str]| parse(args).unwrap().validate().unwrap_err().to_string();
    let m = msg(&["--downlink", t, "--downlink-rate-mbps", "5", "--uplink", t]);
    assert_eq!(
        m,
        "--downlink-rate-mbps: give either --downlink TRACE or --downlink-rate-mbps R, not both"
    );
    let m = msg(&["--downlink", t, "--rate-mbps", "5"]);
    assert!(
        m.starts_with("--rate-mbps: sets both directions, but --uplink")
            || m.starts_with("--rate-mbps: sets both directions, but --downlink"),
        "{m}"
    );
    let m = msg(&["--uplink-rate-mbps", "5", "--rate-mbps", "5"]);
    assert!(
        m.starts_with("--rate-mbps: sets both directions; give it or --uplink-rate-mbps"),
        "{m}"
    );
    // One direction a trace, the other a rate: fine, and --once applies to the trace.
    let a = parse(&["--downlink", t, "--uplink-rate-mbps", "5", "--once"])
        .unwrap()
        .validate()
        .unwrap();
    assert!(a.downlink.capacity.trace().is_some());
    let m = msg(&["--rate-mbps", "5", "--once"]);
    assert!(m.starts_with("--once: applies to trace links"), "{m}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rates_have_the_simulators_bounds() {
    for bad in ["0", "-3", "0.0009", "1000001", "nan", "inf", "fast"] {
        let e = parse(&[&format!("--rate-mbps={bad}")]).unwrap_err();
        assert_eq!(e.exit_code(), EXIT_USAGE);
        assert!(e.to_string().contains("--rate-mbps"), "{bad}: {e}");
    }
    assert!(parse(&["--rate-mbps", "0.001"]).is_ok());
    assert!(parse(&["--rate-mbps", "1000000"]).is_ok());
}

#[test]
fn delay_trace_options() {
    let dir = std::env::temp_dir().join(format!("cellcc-emu-dtrace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("delays.txt");
    std::fs::write(&good, "10\n20\n").unwrap();
    let bad = dir.join("bad-delays.txt");
    std::fs::write(&bad, "10\n20 ms\n").unwrap();
    let g = good.to_str().unwrap();
    let a = parse(&[
        "--rate-mbps",
        "5",
        "--delay-trace",
        g,
        "--delay-trace-step",
        "20",
    ])
    .unwrap()
    .validate()
    .unwrap();
    let d = a.delay_trace.unwrap();
    assert_eq!(d.step(), Dur::from_ms(20));
    assert_eq!(d.delays(), [Dur::from_ms(10), Dur::from_ms(20)]);
    let e = parse(&["--rate-mbps", "5", "--delay-trace", bad.to_str().unwrap()])
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--delay-trace: ") && e.contains("bad-delays.txt:2: expected a delay"),
        "{e}"
    );
    // --delay and --delay-trace are exclusive; a step needs a trace.
    let e = parse(&["--rate-mbps", "5", "--delay", "5", "--delay-trace", g]).unwrap_err();
    assert_eq!(e.exit_code(), EXIT_USAGE);
    assert!(parse(&["--rate-mbps", "5", "--delay-trace-step", "5"]).is_err());
    assert!(parse(&[
        "--rate-mbps",
        "5",
        "--delay-trace",
        g,
        "--delay-trace-step",
        "0"
    ])
    .is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn queue_args_in_mahimahi_spelling() {
    assert_eq!(
        parse_queue(QueueKind::Droptail, "packets=400, bytes=60000", "--q").unwrap(),
        QueueSpec::DropTail {
            packets: Some(400),
            bytes: Some(60000)
        }
    );
    assert_eq!(
        parse_queue(QueueKind::Drophead, "bytes=3000", "--q").unwrap(),
        QueueSpec::DropHead {
            packets: None,
            bytes: Some(3000)
        }
    );
    let QueueSpec::Codel(c) = parse_queue(
        QueueKind::Codel,
        "target=5, interval=100, packets=1000",
        "--q",
    )
    .unwrap() else {
        panic!("expected codel");
    };
    assert_eq!(
        (c.variant, c.target_ms, c.interval_ms),
        (AqmVariant::Mahimahi, 5, 100)
    );
    assert_eq!(c.packets, Some(1000));
    let QueueSpec::Pie(p) = parse_queue(
        QueueKind::Pie,
        "qdelay_ref=20, max_burst=100, packets=200, variant=rfc",
        "--q",
    )
    .unwrap() else {
        panic!("expected pie");
    };
    assert_eq!(
        (p.variant, p.qdelay_ref_ms, p.max_burst_ms),
        (AqmVariant::Rfc, 20, 100)
    );
    assert_eq!(
        parse_queue(QueueKind::Infinite, "", "--q").unwrap(),
        QueueSpec::Infinite
    );
}

#[test]
fn bad_queue_args_name_the_option_and_the_problem() {
    let msg = |kind, args| {
        parse_queue(kind, args, "--downlink-queue-args")
            .unwrap_err()
            .to_string()
    };
    let m = msg(QueueKind::Droptail, "");
    assert!(
        m.starts_with("--downlink-queue-args:") && m.contains("limit"),
        "{m}"
    );
    let m = msg(QueueKind::Droptail, "packets=lots");
    assert!(
        m.contains("packets=lots") && m.contains("whole number"),
        "{m}"
    );
    let m = msg(QueueKind::Droptail, "packet=10");
    assert!(
        m.contains("unknown argument `packet`") && m.contains("packets, bytes"),
        "{m}"
    );
    let m = msg(QueueKind::Infinite, "packets=10");
    assert!(m.contains("takes no arguments"), "{m}");
    let m = msg(QueueKind::Droptail, "packets=0");
    assert!(m.contains("packets"), "{m}");
    let m = msg(QueueKind::Droptail, "packets");
    assert!(m.contains("name=value"), "{m}");
    let m = msg(QueueKind::Droptail, "packets=1, packets=2");
    assert!(m.contains("twice"), "{m}");
    let m = msg(QueueKind::Codel, "variant=linux");
    assert!(m.contains("mahimahi or rfc"), "{m}");
}

#[test]
fn malformed_trace_names_file_and_line() {
    let dir = std::env::temp_dir().join(format!("cellcc-emu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, "1\n2\nx3\n").unwrap();
    let good = dir.join("good.trace");
    std::fs::write(&good, "1\n").unwrap();
    let a = parse(&[
        "--uplink",
        good.to_str().unwrap(),
        "--downlink",
        bad.to_str().unwrap(),
    ])
    .unwrap();
    let e = a.validate().unwrap_err().to_string();
    assert!(e.contains("bad.trace:3:"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_client_program_is_a_usage_error() {
    assert!(program_exists(std::ffi::OsStr::new("sh")));
    assert!(!program_exists(std::ffi::OsStr::new("no-such-program-xyz")));
    assert!(!program_exists(std::ffi::OsStr::new("./no/such/program")));
    // A file that is not executable.
    use std::os::unix::fs::PermissionsExt;
    let file = std::env::temp_dir().join(format!("cellcc-emu-noexec-{}", std::process::id()));
    std::fs::write(&file, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(!program_exists(file.as_os_str()));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(program_exists(file.as_os_str()));
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn identical_addresses_are_refused() {
    let a = parse(&[
        "--uplink",
        "u",
        "--downlink",
        "d",
        "--server-addr",
        "10.1.1.1",
        "--client-addr",
        "10.1.1.1",
    ])
    .unwrap();
    let e = a.validate().unwrap_err().to_string();
    assert!(e.starts_with("--client-addr"), "{e}");
}

#[test]
fn scheduling_presets_resolve_and_unknown_ones_are_listed() {
    assert!(parse_sched(Some("lte-fdd-sr10"), "--uplink-sched")
        .unwrap()
        .is_some());
    assert!(parse_sched(None, "--uplink-sched").unwrap().is_none());
    let e = parse_sched(Some("lte-fast"), "--uplink-sched")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--uplink-sched:") && e.contains("lte-fdd-sr5"),
        "{e}"
    );
}

#[test]
fn queue_descriptions_use_mahimahi_spelling() {
    let spec = QueueSpec::DropTail {
        packets: Some(400),
        bytes: None,
    };
    assert_eq!(queue_description(&spec), "droptail [packets=400]");
    assert_eq!(queue_description(&QueueSpec::Infinite), "infinite");
}
