//! fatpipe-sim: a deterministic packet-level simulator of Linux TCP on long
//! fat networks. Pure Rust; no wall clock, no global RNG, no I/O.

pub mod app;
pub mod cc;
pub mod engine;
pub mod event;
pub mod path;
pub mod rng;
pub mod scenario;
pub mod tcp;
pub mod trace;
pub mod units;
