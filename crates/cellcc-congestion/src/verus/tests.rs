//! Verus formula tests with worked numbers.

use cellcc_units::{Dur, Time};

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn normal(d_min_ms: u64, d_max_bar_ms: u64, d_est_ms: u64) -> Verus {
    let mut v = Verus::new(VerusConfig::default());
    v.phase = Phase::Normal;
    v.d_min = Some(Dur::from_ms(d_min_ms));
    v.d_max_bar = Some(Dur::from_ms(d_max_bar_ms));
    v.d_est = Dur::from_ms(d_est_ms);
    v
}

#[test]
fn d_est_follows_the_epoch_rules() {
    // D_min 40, D̄_max 60 (ratio 1.5 ≤ R = 2), D_est 70 ms.
    let mut v = normal(40, 60, 70);
    // The epoch's maximum 65 ms > D̄_max: rising, D_est − δ₁ = 69 ms;
    // D̄_max ← 0.2·60 + 0.8·65 = 64 ms.
    v.epoch_max = Some(Dur::from_ms(65));
    v.last_ack = Time::from_ms(1000);
    v.run_epoch(Time::from_ms(1005), 30);
    assert_eq!(v.d_est, Dur::from_ms(69));
    assert_eq!(v.d_max_bar, Some(Dur::from_ms(64)));
    // Next epoch's maximum 62 ms < 64: falling, D_est + δ₂ = 71 ms;
    // D̄_max ← 0.2·64 + 0.8·62 = 62.4 ms.
    v.epoch_max = Some(Dur::from_ms(62));
    v.run_epoch(Time::from_ms(1010), 30);
    assert_eq!(v.d_est, Dur::from_ms(71));
    assert_eq!(v.d_max_bar, Some(Dur::from_us(62_400)));
    // D̄_max 90 > R·D_min = 80: D_est − δ₂ whatever the trend, never below D_min.
    let mut v = normal(40, 90, 41);
    v.epoch_max = Some(Dur::from_ms(50));
    v.run_epoch(Time::from_ms(5), 30);
    assert_eq!(v.d_est, Dur::from_ms(40));
    assert_eq!(v.d_min, Some(Dur::from_ms(40)));
    // Stuck at D_min with nothing in flight: D_min rises by 10 ms.
    v.d_max_bar = Some(Dur::from_ms(90));
    v.epoch_max = Some(Dur::from_ms(50));
    v.run_epoch(Time::from_ms(10), 1);
    assert_eq!(v.d_min, Some(Dur::from_ms(50)));
    // An epoch without ACKs: D_max = max(D̄_max, time since the last ACK) = 120 ms,
    // rising: D_est − δ₁.
    let mut v = normal(40, 70, 75);
    v.last_ack = Time::from_ms(880);
    v.run_epoch(Time::from_ms(1000), 30);
    assert_eq!(v.d_est, Dur::from_ms(74));
    assert_eq!(v.d_max_bar, Some(Dur::from_ms(110)));
}

fn sample_profile() -> Profile {
    let mut p = Profile::default();
    // Window 20 measured less delay than 10: the monotone fit pools them at 45 ms.
    p.add(10, Dur::from_ms(50), 1000);
    p.add(20, Dur::from_ms(40), 1000);
    p.add(30, Dur::from_ms(70), 1000);
    p.refit();
    p
}

#[test]
fn profile_fit_is_monotone_and_inverts() {
    let p = sample_profile();
    // Fitted points (10, 45), (20, 45), (30, 70).
    assert!(close(p.delay_at(10.0, 40.0).unwrap(), 45.0));
    assert!(close(p.delay_at(25.0, 40.0).unwrap(), 57.5));
    // Inverse: 60 ms lies between (20, 45) and (30, 70): W = 20 + 10·15/25 = 26.
    assert!(close(p.window_for(60.0).unwrap(), 26.0));
    // On the flat part the largest window is taken.
    assert!(close(p.window_for(45.0).unwrap(), 20.0));
    // Below the curve: one packet.
    assert!(close(p.window_for(30.0).unwrap(), 1.0));
    // At the top of the curve: the largest window; above it, no window (the reference's
    // "can't map delay on delay curve").
    assert!(close(p.window_for(70.0).unwrap(), 30.0));
    assert_eq!(p.window_for(70.001), None);
    // The forward curve beyond the last point: the fit's slope (70 − 45)/(30 − 10) =
    // 1.25 ms/packet (D_min = 20 ms: the floor 20/30 is lower): 38 → 70 + 8·1.25 = 80 ms.
    assert!(close(p.delay_at(38.0, 20.0).unwrap(), 80.0));
    // With D_min = 40 ms the floor 40/30 ms/packet binds: 37.5 → 70 + 7.5·40/30 = 80 ms.
    assert!(close(p.delay_at(37.5, 40.0).unwrap(), 80.0));
    // Samples are smoothed with weight 7/8 on the old value: 40 then 48 → 41 ms.
    let mut q = Profile::default();
    q.add(5, Dur::from_ms(40), 100);
    q.add(5, Dur::from_ms(48), 100);
    q.refit();
    assert!(close(q.delay_at(5.0, 40.0).unwrap(), 41.0));
}

#[test]
fn loss_cuts_to_beta_of_the_window_at_send_and_recovers_by_one_over_w() {
    let mut v = Verus::new(VerusConfig::default());
    let mut sock = Sock::new(1448, Time::ZERO);
    v.init(&mut sock);
    v.phase = Phase::Normal;
    v.profile = sample_profile();
    v.d_min = Some(Dur::from_ms(40));
    v.d_est = Dur::from_ms(70);
    // W was 30 from t = 0 and 40 from t = 1 s; a loss noticed at 1.05 s with srtt 100 ms
    // concerns a packet sent at 0.95 s, at W = 30: W = 0.7 · 30 = 21.
    v.w = 30.0;
    v.record_w(Time::ZERO);
    v.w = 40.0;
    v.record_w(Time::from_ms(1000));
    sock.now = Time::from_ms(1050);
    sock.srtt = Dur::from_ms(100);
    v.set_state(&mut sock, CaState::Recovery);
    assert_eq!(v.state(), Phase::Loss);
    assert!(close(v.w, 21.0), "{}", v.w);
    // D_est drops to the profile's delay at 21: 45 + 1·2.5 = 47.5 ms.
    assert_eq!(v.d_est, Dur::from_us(47_500));
    // An ACK for a packet sent at W = 40 (RTT 60 ms) stays in the loss phase and adds
    // 2/21 for two packets.
    v.on_delay(Time::from_ms(1060), Dur::from_ms(60), 2);
    assert_eq!(v.state(), Phase::Loss);
    assert!(close(v.w, 21.0 + 2.0 / 21.0));
    // Once a packet sent after the cut comes back, the loss phase ends.
    v.record_w(Time::from_ms(1060));
    v.on_delay(Time::from_ms(1200), Dur::from_ms(60), 1);
    assert_eq!(v.state(), Phase::Normal);
}

#[test]
fn slow_start_exits_on_a_long_delay() {
    let mut v = Verus::new(VerusConfig::default());
    let mut sock = Sock::new(1448, Time::ZERO);
    v.init(&mut sock);
    v.on_delay(Time::from_ms(50), Dur::from_ms(40), 2);
    assert!(close(v.w, 12.0));
    v.record_w(Time::from_ms(50));
    // 600 ms > 500 ms (sent at 200 ms, at W = 12): W = 0.7 · 12, D_est = 0.75·R·D_min =
    // 60 ms; the ACK itself then counts as a loss-phase ACK: +1/W, and D_est falls to
    // the profile's delay at W (the only sample, 40 ms at W = 10).
    v.on_delay(Time::from_ms(800), Dur::from_ms(600), 1);
    assert_eq!(v.state(), Phase::Loss);
    assert!(close(v.w, 0.7 * 12.0 + 1.0 / (0.7 * 12.0)), "{}", v.w);
    assert_eq!(v.d_est, Dur::from_ms(40));
}

#[test]
fn config_errors_name_the_field() {
    let bad = VerusConfig {
        r: 1.0,
        ..VerusConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "r");
    let bad = VerusConfig {
        beta: 1.5,
        ..VerusConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "beta");
    assert!(VerusConfig::default().validate().is_ok());
}

#[test]
fn d_est_above_the_profile_restarts_slow_start() {
    let mut v = normal(40, 60, 69);
    let mut sock = Sock::new(1448, Time::ZERO);
    v.init(&mut sock);
    v.phase = Phase::Normal;
    v.profile = sample_profile();
    // D̄_max 60 ≤ R·D_min = 80 and the epoch's 55 ms below it: D_est + δ₂ = 71 ms, above
    // the curve's top (70 ms at W = 30): slow start again from TCP's initial window,
    // with a new profile and D_min.
    v.w = 30.0;
    v.epoch_max = Some(Dur::from_ms(55));
    v.run_epoch(Time::from_ms(5), 30);
    assert_eq!(v.state(), Phase::SlowStart);
    assert!(close(v.w, 10.0), "{}", v.w);
    assert_eq!(v.d_min, None);
    assert!(!v.profile.has_fit());
    assert_eq!(v.restarts, 1);
}
