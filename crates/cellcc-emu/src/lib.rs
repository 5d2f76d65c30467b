//! Real-time link emulation for cellcc: the simulator's sans-I/O `cellcc-link` links
//! driven by a monotonic clock between two TUN devices in two network namespaces, plus a
//! TCP traffic tool for experiments through them.
//!
//! * `cellcc-emu` (module [`emulator`]): Mahimahi-compatible `mm-delay D mm-link UP DOWN
//!   -- cmd`, with the queue disciplines, loss, `--once` and per-direction mm-link logs.
//! * `cellcc-flow` (module [`flow`]): a bulk TCP sender that samples `TCP_INFO`, and a
//!   receiver that logs every read.
//!
//! The user documentation, with measured accuracy, is `docs/emulator.md`.

pub mod cli;
pub mod emulator;
pub mod flow;
pub mod logwriter;
pub mod netns;
pub mod offload;
pub mod output;
pub mod path;
pub mod privs;
pub mod procs;
pub mod stats;
pub mod sys;
