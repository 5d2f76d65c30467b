//! Trace parser: strict format, and error messages that name the file and line.

use std::io::Cursor;

use cellcc_link::{Trace, TraceError};

fn parse(text: &str, name: &str) -> Result<Trace, TraceError> {
    Trace::parse(Cursor::new(text.as_bytes()), name)
}

fn message(text: &str, name: &str) -> String {
    parse(text, name)
        .expect_err("the trace is invalid")
        .to_string()
}

#[test]
fn accepts_a_valid_trace_with_or_without_final_newline() {
    let t = parse("0\n0\n3\n17\n", "ok.trace").unwrap();
    assert_eq!(t.timestamps_ms(), [0, 0, 3, 17]);
    assert_eq!(t.period_ms(), 17);
    assert_eq!(t.name(), "ok.trace");
    assert_eq!(parse("1\n2", "x").unwrap().timestamps_ms(), [1, 2]);
}

#[test]
fn non_integer() {
    let m = message("0\n1\n1.5\n", "bad.trace");
    assert!(m.starts_with("bad.trace:3: "), "{m}");
    assert!(
        m.contains("\"1.5\"") && m.contains("whole number of milliseconds"),
        "{m}"
    );
    let m = message("0\n 7\n", "space.trace");
    assert!(
        m.starts_with("space.trace:2: ") && m.contains("\" 7\""),
        "{m}"
    );
}

#[test]
fn decreasing() {
    let mut text: String = (0..16).map(|i| format!("{i}\n")).collect();
    text.push_str("12\n");
    let m = message(&text, "TMobile.down");
    assert_eq!(
        m,
        "TMobile.down:17: timestamp 12 is smaller than the previous line's 15; Mahimahi traces must be non-decreasing"
    );
}

#[test]
fn empty() {
    let m = message("", "empty.trace");
    assert!(
        m.starts_with("empty.trace:1: ") && m.contains("empty"),
        "{m}"
    );
}

#[test]
fn last_timestamp_zero() {
    let m = message("0\n0\n", "zero.trace");
    assert!(
        m.starts_with("zero.trace:2: ") && m.contains("last timestamp is 0"),
        "{m}"
    );
}

#[test]
fn negative() {
    let m = message("5\n-3\n", "neg.trace");
    assert!(
        m.starts_with("neg.trace:2: ") && m.contains("-3 is negative"),
        "{m}"
    );
}

#[test]
fn windows_line_endings_blank_lines_and_overflow() {
    let m = message("1\r\n2\r\n", "crlf.trace");
    assert!(
        m.starts_with("crlf.trace:1: ") && m.contains("dos2unix"),
        "{m}"
    );
    let m = message("1\n\n2\n", "blank.trace");
    assert!(
        m.starts_with("blank.trace:2: ") && m.contains("blank"),
        "{m}"
    );
    let m = message("1\n2\n\n", "trailing.trace");
    assert!(m.starts_with("trailing.trace:3: "), "{m}");
    let m = message("1\n4294967296\n", "big.trace");
    assert!(
        m.starts_with("big.trace:2: ") && m.contains("32 bits"),
        "{m}"
    );
    assert_eq!(
        parse("4294967295\n", "max").unwrap().period_ms(),
        u64::from(u32::MAX)
    );
}

#[test]
fn long_garbage_is_quoted_briefly() {
    let line = "x".repeat(500);
    let m = message(&format!("{line}\n"), "junk.trace");
    assert!(m.starts_with("junk.trace:1: ") && m.len() < 300, "{m}");
}

#[test]
fn from_timestamps_applies_the_same_rules() {
    let m = Trace::from_timestamps(vec![1, 5, 4], "synthetic")
        .unwrap_err()
        .to_string();
    assert!(
        m.starts_with("synthetic:3: timestamp 4 is smaller than the previous line's 5"),
        "{m}"
    );
    assert!(Trace::from_timestamps(vec![], "s")
        .unwrap_err()
        .to_string()
        .starts_with("s:1: "));
    assert!(Trace::from_timestamps(vec![0], "s")
        .unwrap_err()
        .to_string()
        .starts_with("s:1: "));
}

#[test]
fn from_file_names_the_path() {
    let dir = std::env::temp_dir().join(format!("cellcc-link-parser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.up");
    std::fs::write(&good, "0\n5\n5\n10\n").unwrap();
    let t = Trace::from_file(&good).unwrap();
    assert_eq!((t.name(), t.len()), ("good.up", 4));
    let bad = dir.join("bad.up");
    std::fs::write(&bad, "0\n5\nfive\n").unwrap();
    let m = Trace::from_file(&bad).unwrap_err().to_string();
    assert!(m.starts_with(&format!("{}:3: ", bad.display())), "{m}");
    let missing = dir.join("missing.up");
    let m = Trace::from_file(&missing).unwrap_err().to_string();
    assert!(
        m.starts_with(&format!("{}: cannot read", missing.display())),
        "{m}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
