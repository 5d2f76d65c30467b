//! Deterministic discrete-event simulator for congestion control on cellular links.
//!
//! A run is a pure function `(Scenario, seed) → SimOutput`: [`scenario`] loads and checks
//! a TOML scenario, [`sim`] runs the event loop over the links of `cellcc-link` and the
//! TCP endpoints of [`tcp`] driving the algorithms of `cellcc-congestion`, and
//! [`metrics`] reduces what happens to summaries and time series as it happens.

pub mod control;
pub mod metrics;
pub mod packet;
pub mod rng;
pub mod scenario;
pub mod schemes;
pub mod sim;
pub mod tcp;
pub mod traffic;

pub use scenario::{Direction, Scenario, ScenarioError};
pub use sim::{
    run, AckRecord, Cancelled, CcInfo, Conservation, RunError, SimOutput, Simulation, Step,
};
