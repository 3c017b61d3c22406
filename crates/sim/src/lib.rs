//! fatpipe-sim: a deterministic packet-level simulator of Linux TCP on long
//! fat networks. Pure Rust; no wall clock, no global RNG, no I/O.

pub mod cc;
pub mod event;
pub mod rng;
pub mod tcp;
pub mod units;
