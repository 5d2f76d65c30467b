use super::*;

#[test]
fn utility_worked_numbers() {
    let cfg = VivaceConfig::default();
    // 10 Mbit/s, flat RTT, no loss: 10^0.9 = 7.943.
    let u = utility(10.0, 0.0, 0.0, &cfg);
    assert!((u - 7.943_282).abs() < 1e-6, "{u}");
    // RTT rising 2 ms per 100 ms (0.02): −900·10·0.02 = −180.
    let u = utility(10.0, 0.02, 0.0, &cfg);
    assert!((u - (7.943_282 - 180.0)).abs() < 1e-6, "{u}");
    // 1 % loss: −11.35·10·0.01 = −1.135.
    let u = utility(10.0, 0.0, 0.01, &cfg);
    assert!((u - (7.943_282 - 1.135)).abs() < 1e-6, "{u}");
}

#[test]
fn amplifier_sequence_is_the_references() {
    // ⌊(n+1)/2⌋^1.2 for n = 1, 2, 3, …: 1, 1, 2^1.2, 2^1.2, 3^1.2.
    let m: Vec<f64> = (1..=5).map(|n| amplifier(n, 1.2)).collect();
    let want = [1.0, 1.0, 2.297_397, 2.297_397, 3.737_192];
    for (a, b) in m.iter().zip(want) {
        assert!((a - b).abs() < 1e-5, "{m:?}");
    }
}

#[test]
fn step_is_bounded_and_the_bound_moves() {
    let cfg = VivaceConfig::default();
    // γ = 0.2 at 10 Mbit/s, m = 1: θ·γ = 0.22 < bound 0.5, but the step is at least
    // 0.5 Mbit/s.
    let (d, k) = step(10.0, 0.2, 1.0, 0, &cfg);
    assert!((d - 0.5).abs() < 1e-12 && k == 0, "{d} {k}");
    // At 40 Mbit/s: 0.22 < 2.0, unclipped but raised to the 0.5 floor.
    let (d, _) = step(40.0, 0.2, 1.0, 0, &cfg);
    assert_eq!(d, 0.5);
    // γ = 2 at 20 Mbit/s: 2.2 > 1.0 → clipped to 1.0, k → 1.
    let (d, k) = step(20.0, 2.0, 1.0, 0, &cfg);
    assert!((d - 1.0).abs() < 1e-12 && k == 1);
    // With k = 1 the bound is 10 % = 2.0: 2.2 clipped again, k → 2.
    let (d, k) = step(20.0, 2.0, 1.0, 1, &cfg);
    assert!((d - 2.0).abs() < 1e-12 && k == 2);
    // With k = 2 (15 % = 3.0) the step fits and k falls back to 1.
    let (d, k) = step(20.0, 2.0, 1.0, 2, &cfg);
    assert!((d - 2.0 * cfg.theta).abs() < 1e-12 && k == 1);
}

#[test]
fn regression_slope_and_deviation() {
    let mut r = Regression::default();
    for i in 0..10 {
        let t = f64::from(i) * 0.01;
        r.add(t, 0.02 + 0.5 * t);
    }
    assert!((r.slope() - 0.5).abs() < 1e-9);
    let mut flat = Regression::default();
    for y in [0.04, 0.042, 0.04, 0.042] {
        flat.add(0.0, y);
    }
    // Mean 41 ms, deviation 1 ms.
    assert!((flat.relative_deviation() - 1.0 / 41.0).abs() < 1e-9);
}

#[test]
fn probing_votes_need_a_majority_up_or_all_down() {
    let mut v = Vivace {
        rate: Vivace::bytes_per_s(10.0),
        ..Vivace::default()
    };
    v.start_probing(1);
    // Two pairs favour the higher rate, one the lower: increase.
    let res = [
        (10.5, 9.0),
        (9.5, 8.0),
        (9.5, 8.5),
        (10.5, 8.4),
        (10.5, 9.2),
        (9.5, 8.0),
    ];
    v.on_utilities(&res);
    assert!(matches!(v.phase, Phase::DecisionMade { direction, .. } if direction > 0.0));
    // r = 10·1.05 = 10.5, then θ·γ with γ = (1 + 1.2)/3 per Mbit/s → 0.806, clipped
    // to 5 % of 10.5.
    assert!((Vivace::mbps(v.rate) - 10.5 * 1.05).abs() < 1e-9);
    assert_eq!(v.bound_k, 1);
    // Two of three favour the lower rate: no decision, probe again.
    let mut v = Vivace {
        rate: Vivace::bytes_per_s(10.0),
        ..Vivace::default()
    };
    v.start_probing(1);
    let res = [
        (10.5, 8.0),
        (9.5, 9.0),
        (9.5, 8.5),
        (10.5, 8.4),
        (10.5, 9.2),
        (9.5, 8.0),
    ];
    v.on_utilities(&res);
    assert!(matches!(v.phase, Phase::Probing { rounds: 2, .. }));
    assert_eq!(Vivace::mbps(v.rate), 10.0);
}

#[test]
fn decision_made_steps_until_the_utility_turns() {
    let mut v = Vivace {
        rate: Vivace::bytes_per_s(10.0),
        phase: Phase::DecisionMade {
            direction: 1.0,
            rounds: 1,
            last: (9.0, 5.0),
        },
        ..Vivace::default()
    };
    // Rate 10 → utility 6: keep going, second step (m = 1).
    v.on_utilities(&[(10.0, 6.0)]);
    assert!(matches!(v.phase, Phase::DecisionMade { rounds: 2, .. }));
    // γ = 1 → θ = 1.0995 > bound 0.5 → clipped to 0.5.
    assert!((Vivace::mbps(v.rate) - 10.5).abs() < 1e-9);
    // Worse at the higher rate: step back and probe.
    v.on_utilities(&[(10.5, 5.9)]);
    assert!(matches!(v.phase, Phase::Probing { rounds: 1, .. }));
    assert!(Vivace::mbps(v.rate) < 10.5);
}

#[test]
fn probing_round_has_both_sides_of_each_pair() {
    let mut v = Vivace::default();
    v.start_probing(1);
    let Phase::Probing { plan, .. } = &v.phase else {
        panic!("probing")
    };
    assert_eq!(plan.len(), 6);
    for pair in plan.iter().collect::<Vec<_>>().chunks(2) {
        assert_eq!(pair[0] + pair[1], 0.0);
        assert_eq!(pair[0].abs(), 0.05);
    }
}

#[test]
fn trend_flags_an_abnormal_rise() {
    let mut t = Trend::default();
    // A flat-ish RTT with small wiggles establishes the running statistics.
    for i in 0..30 {
        let wiggle = if i % 2 == 0 { 50.0 } else { -50.0 };
        assert!(!t.inflated(40_000.0 + wiggle, 6), "step {i}");
    }
    // Then the mean RTT climbs by 2 ms per MI.
    let flagged = (1..=6).any(|i| t.inflated(40_000.0 + 2_000.0 * f64::from(i), 6));
    assert!(flagged);
}

#[test]
fn validate_names_the_field() {
    let c = VivaceConfig {
        epsilon: 0.0,
        ..VivaceConfig::default()
    };
    assert_eq!(c.validate().unwrap_err().field, "epsilon");
    assert!(VivaceConfig::default().validate().is_ok());
}
