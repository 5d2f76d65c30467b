//! A fixed congestion window (and optional fixed pacing rate): the reference point of
//! César Fig. 1 ("a fixed cwnd at the BDP") and a probe for path models, since the
//! window never reacts to anything.
//!
//! Owns cwnd (`cong_control`), so neither loss recovery (PRR) nor an RTO changes it.
//! Differences from the papers' setups: none to speak of; César's authors fix cwnd with
//! a kernel module, here the controller simply never moves it.

use serde::Deserialize;

use crate::{ConfigError, CongestionControl, PacingStatus, RateSample, Sock};

/// Parameters of [`Fixed`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedConfig {
    /// The congestion window, packets.
    pub cwnd: u32,
    /// Optional pacing rate, Mbit/s (off by default: cwnd-limited bursts).
    #[serde(default)]
    pub pacing_mbps: Option<f64>,
}

impl FixedConfig {
    /// Check every value: cwnd ≥ 1 packet, a pacing rate finite and positive.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.cwnd == 0 {
            return Err(ConfigError {
                scheme: "fixed",
                field: "cwnd".into(),
                reason: "must be >= 1 packet".into(),
            });
        }
        if let Some(r) = self.pacing_mbps {
            if !(r.is_finite() && r > 0.0) {
                return Err(ConfigError {
                    scheme: "fixed",
                    field: "pacing_mbps".into(),
                    reason: format!("must be a positive rate, got {r}"),
                });
            }
        }
        Ok(())
    }
}

/// The controller: state is the configuration itself.
#[derive(Clone, Debug)]
pub struct Fixed {
    cfg: FixedConfig,
}

impl Fixed {
    /// A controller that holds `cfg.cwnd` (and pacing rate) from `init` on.
    pub fn new(cfg: FixedConfig) -> Self {
        Fixed { cfg }
    }

    fn apply(&self, sock: &mut Sock) {
        sock.cwnd = self.cfg.cwnd.min(sock.cwnd_clamp);
        if let Some(mbps) = self.cfg.pacing_mbps {
            sock.pacing_rate = (mbps * 1e6 / 8.0) as u64;
        }
    }
}

impl CongestionControl for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn init(&mut self, sock: &mut Sock) {
        if self.cfg.pacing_mbps.is_some() {
            sock.pacing_status = PacingStatus::Needed;
        }
        self.apply(sock);
    }

    fn ssthresh(&mut self, _sock: &Sock) -> u32 {
        self.cfg.cwnd
    }

    fn cong_control(&mut self, sock: &mut Sock, _rs: &RateSample) {
        self.apply(sock);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    fn undo_cwnd(&mut self, _sock: &Sock) -> u32 {
        self.cfg.cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellcc_units::Time;

    #[test]
    fn the_window_never_moves() {
        let mut cc = Fixed::new(FixedConfig {
            cwnd: 7,
            pacing_mbps: Some(8.0),
        });
        let mut sock = Sock::new(1448, Time::ZERO);
        cc.init(&mut sock);
        assert_eq!(sock.cwnd, 7);
        assert_eq!(sock.pacing_rate, 1_000_000);
        assert_eq!(sock.pacing_status, PacingStatus::Needed);
        sock.cwnd = 3; // as if a reduction had happened
        cc.cong_control(&mut sock, &RateSample::default());
        assert_eq!(sock.cwnd, 7);
        assert_eq!(cc.ssthresh(&sock), 7);
        assert!(FixedConfig {
            cwnd: 0,
            pacing_mbps: None
        }
        .validate()
        .is_err());
        let err = FixedConfig {
            cwnd: 1,
            pacing_mbps: Some(-1.0),
        }
        .validate()
        .unwrap_err();
        assert_eq!(err.field, "pacing_mbps");
    }
}
