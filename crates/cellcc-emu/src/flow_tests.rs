//! Unit tests of `cellcc-flow` (`flow.rs`): TCP_INFO layout, errors, loopback transfers.

use super::*;

/// A transfer of `duration_ms` with `cc`: TCP_INFO every 10 ms, 5 s to connect, no logs,
/// no summary file, no drain limit.
fn send_options(to: SocketAddr, cc: &str, duration_ms: u64) -> SendOptions {
    SendOptions {
        to,
        cc: cc.into(),
        duration: Duration::from_millis(duration_ms),
        info_log: None,
        info_interval: Duration::from_millis(10),
        connect_timeout: Duration::from_secs(5),
        summary: None,
        drain: None,
    }
}

#[test]
fn tcp_info_layout_matches_linux() {
    // Offsets from linux/tcp.h: tcpi_rtt at 68, tcpi_snd_cwnd at 80,
    // tcpi_total_retrans at 100, tcpi_pacing_rate at 104, tcpi_bytes_acked at 120,
    // tcpi_min_rtt at 148, tcpi_delivery_rate at 160, tcpi_rwnd_limited at 176,
    // tcpi_sndbuf_limited at 184, tcpi_snd_wnd at 228, tcpi_rcv_wnd at 232.
    assert_eq!(std::mem::offset_of!(TcpInfo, rtt), 68);
    assert_eq!(std::mem::offset_of!(TcpInfo, snd_cwnd), 80);
    assert_eq!(std::mem::offset_of!(TcpInfo, total_retrans), 100);
    assert_eq!(std::mem::offset_of!(TcpInfo, pacing_rate), 104);
    assert_eq!(std::mem::offset_of!(TcpInfo, bytes_acked), 120);
    assert_eq!(std::mem::offset_of!(TcpInfo, min_rtt), 148);
    assert_eq!(std::mem::offset_of!(TcpInfo, delivery_rate), 160);
    assert_eq!(std::mem::offset_of!(TcpInfo, rwnd_limited), 176);
    assert_eq!(std::mem::offset_of!(TcpInfo, sndbuf_limited), 184);
    assert_eq!(std::mem::offset_of!(TcpInfo, snd_wnd), 228);
    assert_eq!(std::mem::offset_of!(TcpInfo, rcv_wnd), 232);
}

#[test]
fn unknown_congestion_control_lists_the_available_ones() {
    let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let err = tcp_socket(&to, "no-such-cc").unwrap_err().to_string();
    assert!(
        err.contains("--cc no-such-cc") && err.contains("available:"),
        "{err}"
    );
}

#[test]
fn connecting_to_nobody_gives_up_after_the_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    drop(listener);
    let opts = SendOptions {
        connect_timeout: Duration::from_millis(300),
        ..send_options(to, "cubic", 100)
    };
    let started = std::time::Instant::now();
    let err = send(&opts).unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(err.exit_code(), 1);
    let msg = err.to_string();
    assert!(
        msg.contains("connecting to") && msg.contains("attempts"),
        "{msg}"
    );
}

#[test]
fn a_failed_transfer_leaves_no_output_and_never_writes_through_a_symlink() {
    let dir = std::env::temp_dir().join(format!("cellcc-flow-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("info.csv")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    drop(listener);
    let opts = SendOptions {
        info_log: Some(dir.join("info.csv")),
        connect_timeout: Duration::from_millis(100),
        summary: Some(dir.join("send.json")),
        ..send_options(to, "reno", 100)
    };
    send(&opts).unwrap_err();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    // The symlink is still there (the run failed, nothing was renamed over it), and
    // no empty summary or temporary file was left.
    assert_eq!(left, ["info.csv", "victim"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn drain_resets_a_connection_whose_queue_does_not_empty_and_recv_takes_it_as_the_end() {
    // A peer that reads nothing: the sender's queue cannot empty.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = listener.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        std::thread::sleep(Duration::from_millis(600));
        let mut buf = vec![0u8; CHUNK_BYTES];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => return io::ErrorKind::UnexpectedEof,
                Ok(_) => continue,
                Err(e) => return e.kind(),
            }
        }
    });
    let opts = SendOptions {
        summary: Some(
            std::env::temp_dir().join(format!("cellcc-drain-{}.json", std::process::id())),
        ),
        drain: Some(Duration::from_millis(200)),
        ..send_options(to, "cubic", 100)
    };
    let started = std::time::Instant::now();
    let sent = send(&opts).unwrap();
    std::fs::remove_file(opts.summary.as_ref().unwrap()).unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        sent.reset && sent.unsent_bytes > 0,
        "{} unsent",
        sent.unsent_bytes
    );
    assert!(sent.unsent_bytes <= sent.bytes_written);
    assert_eq!(peer.join().unwrap(), io::ErrorKind::ConnectionReset);

    // `recv` against a sender that resets after data: the end, not an error.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let recv_opts = RecvOptions {
        port,
        bind: "127.0.0.1".parse().unwrap(),
        log: None,
        summary: Some(
            std::env::temp_dir().join(format!("cellcc-reset-{}.json", std::process::id())),
        ),
    };
    let summary = recv_opts.summary.clone().unwrap();
    let receiver = std::thread::spawn(move || recv(&recv_opts));
    let mut stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(_) => std::thread::sleep(RETRY_PAUSE),
        }
    };
    stream.write_all(&[7u8; 100_000]).unwrap();
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid `struct linger` of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
    std::thread::sleep(Duration::from_millis(100));
    drop(stream);
    let got = receiver.join().unwrap().unwrap();
    std::fs::remove_file(summary).unwrap();
    assert!(got.reset);
    assert!(got.bytes > 0 && got.bytes <= 100_000, "{}", got.bytes);
}

#[test]
fn loopback_transfer_reports_bytes_and_samples() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let dir = std::env::temp_dir().join(format!("cellcc-flow-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let recv_opts = RecvOptions {
        port,
        bind: "127.0.0.1".parse().unwrap(),
        log: Some(dir.join("recv.csv")),
        summary: Some(dir.join("recv.json")),
    };
    let receiver = std::thread::spawn(move || recv(&recv_opts).unwrap());
    let send_opts = SendOptions {
        info_log: Some(dir.join("info.csv")),
        summary: Some(dir.join("send.json")),
        drain: Some(Duration::from_secs(5)),
        ..send_options(SocketAddr::from(([127, 0, 0, 1], port)), "cubic", 200)
    };
    let sent = send(&send_opts).unwrap();
    let got = receiver.join().unwrap();
    // The receiver reads everything, so the queue empties well within the drain time.
    assert!(!sent.reset && sent.unsent_bytes == 0 && !got.reset);
    assert_eq!(got.bytes, sent.bytes_written);
    assert!(sent.samples >= 10, "{}", sent.samples);
    let info = std::fs::read_to_string(dir.join("info.csv")).unwrap();
    assert_eq!(info.lines().next(), Some(InfoSample::CSV_HEADER));
    assert!(info.lines().count() as u64 == sent.samples + 1);
    let log = std::fs::read_to_string(dir.join("recv.csv")).unwrap();
    let logged: u64 = log
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(logged, got.bytes);
    // The receive side's state: a measured RTT, a window and a buffer that autotuning
    // grew past the default 128 KiB for a transfer of this size.
    assert_eq!(log.lines().next(), Some(RecvSample::CSV_HEADER));
    let last: Vec<u64> = log
        .lines()
        .last()
        .unwrap()
        .split(',')
        .map(|f| f.parse().unwrap())
        .collect();
    assert_eq!(last.len(), 7);
    let (rcv_space, rcv_wnd, rcvbuf) = (last[3], last[5], last[6]);
    assert!(rcv_space > 0 && rcv_wnd > 0, "{last:?}");
    assert!(rcvbuf > 131_072, "{last:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
