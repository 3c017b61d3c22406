//! The TCP engine: sender, receiver and their loss-recovery machinery, with
//! Linux's behaviour (RACK-TLP, PRR, delivery-rate sampling, pacing,
//! delayed ACKs, socket-buffer limits).

pub mod ack;
pub mod ca_state;
pub mod cc_log;
pub mod chrono;
pub mod ecn;
mod gso;
pub mod info;
mod loss;
pub mod prr;
pub mod rack;
pub mod rate;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
mod segbits;
#[cfg(test)]
mod scoreboard_tests;
pub mod sender;
pub mod sndbuf;
pub mod timers;
pub mod timestamps;
pub mod tsorted;
pub mod undo;

pub use ecn::{Codepoint, SegEcn};
pub use info::TcpInfo;
pub use receiver::{gro_max_segs, Ack, Receiver, RxAction};
pub use sender::{Sender, SenderConfig, SenderEnv, SmallQueueRoom};
