//! One TCP socket driven by a conformance script (`fatpipe conform`, the
//! packetdrill language): the script plays the application (system calls
//! at given times) and the peer (the packets it injects), and expects the
//! packets the socket sends. The socket is the simulator's own sender
//! (tcp::Sender) behind a handshake and the byte-level wire a script
//! speaks; no simulated path or receiver takes part.
//!
//! The sender counts whole segments, so a script's byte numbers must fall
//! on segment boundaries of the negotiated MSS: a write, an ACK or a SACK
//! edge that does not is refused as outside the model (naming it), never
//! rounded. Only the sending side is modelled: data from the peer, and a
//! peer without SACK (Reno's duplicate-ACK counting, tcp_add_reno_sack()),
//! are refused the same way.

mod handshake;
pub mod packet;
pub mod sysctls;
mod socket;

pub use socket::{ScriptedSocket, SockOpt, TcpInfoField};
