//! Hostile scenario text: a valid scenario with one to three keys set to values at and
//! beyond their limits (docs/scenarios.md, "Limits") is refused with an error naming
//! the key, or loads and runs to the end; it never panics. The Python fuzz suite
//! (tests/fuzz) drives the same code through the binding with more shapes; this one
//! needs no Python and runs in `cargo test`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use cellcc_sim::{run, Scenario};
use proptest::prelude::*;

/// The scenario every case mutates: a rate link each way, a drop-tail queue, one flow.
/// Values are `{key}` placeholders filled per case.
const TEMPLATE: &str = "duration_s = {duration_s}
seed = {seed}
[downlink]
rate_mbps = {rate_mbps}
delay_ms = {delay_ms}
queue = { kind = \"droptail\", packets = {packets} }
loss = {loss}
[uplink]
rate_mbps = 50.0
delay_ms = {up_delay_ms}
[metrics]
bin_ms = {bin_ms}
[tcp]
init_cwnd = {init_cwnd}
[[flows]]
scheme = {scheme}
start_s = {start_s}
";

/// Each key's valid value and the hostile ones a case may put there instead. Accepted
/// values keep runs short (rates within 100 Mbit/s, at most 0.5 s).
const KEYS: &[(&str, &str, &[&str])] = &[
    (
        "duration_s",
        "0.5",
        &[
            "0", "-1", "1e-300", "1e308", "nan", "inf", "1e7", "\"x\"", "[]",
        ],
    ),
    (
        "seed",
        "1",
        &["-1", "18446744073709551616", "1.5", "\"abc\""],
    ),
    (
        "rate_mbps",
        "12.0",
        &[
            "0", "-1", "1e-300", "5e-7", "1e300", "nan", "inf", "0.001", "\"x\"",
        ],
    ),
    (
        "delay_ms",
        "10.0",
        &["-1", "1e300", "nan", "inf", "60000.5", "1e-300", "{}"],
    ),
    (
        "packets",
        "50",
        &["0", "-1", "4294967296", "18446744073709551615", "1.5", "1"],
    ),
    ("loss", "0.0", &["1", "1.5", "-0.1", "nan", "0.999999"]),
    ("up_delay_ms", "10.0", &["-1", "1e300", "inf"]),
    (
        "bin_ms",
        "100.0",
        &["0", "1e-300", "-1", "nan", "1e-9", "0.001"],
    ),
    ("init_cwnd", "10", &["0", "-1", "4294967296", "100000"]),
    (
        "scheme",
        "\"cubic\"",
        &["\"\"", "\"nope\"", "5", "[\"cubic\"]", "\"a:b\""],
    ),
    ("start_s", "0.0", &["-1", "0.5", "1e308", "nan"]),
];

fn scenario_text(choices: &[(usize, usize)]) -> String {
    let mut text = TEMPLATE.to_string();
    for (k, (key, valid, hostile)) in KEYS.iter().enumerate() {
        let value = choices
            .iter()
            .rev()
            .find(|(which, _)| *which == k)
            .map_or(*valid, |(_, v)| hostile[v % hostile.len()]);
        text = text.replace(&format!("{{{key}}}"), value);
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn hostile_values_are_refused_by_name_or_run(
        choices in prop::collection::vec((0..KEYS.len(), 0usize..16), 1..4)
    ) {
        let text = scenario_text(&choices);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            match Scenario::parse(&text, "hostile.toml", None) {
                Err(e) => Err(e.to_string()),
                Ok(sc) => run(&sc).map(|_| ()).map_err(|e| e.to_string()),
            }
        }));
        let Ok(result) = outcome else {
            panic!("panicked on\n{text}");
        };
        if let Err(message) = result {
            prop_assert!(!message.trim().is_empty() && !message.contains('\n'), "{message}");
            // The error names one of the keys the case changed (or the file for a value
            // TOML itself cannot hold).
            let named = choices.iter().any(|(k, _)| {
                let key = KEYS[*k].0;
                let key = match key {
                    "packets" => "queue",
                    "up_delay_ms" => "uplink",
                    other => other,
                };
                message.contains(key)
            });
            prop_assert!(named || message.contains("hostile.toml"), "{message}\n{text}");
        }
    }
}
