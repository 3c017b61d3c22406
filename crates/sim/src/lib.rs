//! fatpipe-sim: a deterministic packet-level simulator of Linux TCP on long
//! fat networks. Pure Rust; no wall clock, no global RNG, no I/O.
//!
//! # Layout
//!
//! * [`plan`] — the RunPlan as Python sends it: serde structs that refuse
//!   unknown fields and name the fields ignored on purpose.
//! * [`scenario`] — RunPlan JSON in (through [`plan`], validated, errors
//!   name the field), [`trace::RunResult`] out; `scenario::run_json` is
//!   the entry point.
//! * [`engine`] — the event loop: streams, shared path, sampling.
//! * [`path`] — loss stage, bottleneck FIFO, constant-delay pipes.
//! * [`event`] — (time, seq) heap for timers; one-event-per-timer [`event::Timer`].
//! * [`tcp`] — sender (send path, timers, ACK processing, undo), receiver,
//!   SACK scoreboard, RACK, PRR, RTT/RTO, delivery-rate sampling, chrono.
//! * [`app`] — RPC request/response applications; [`transfer`] data sets of
//!   a given size and their completion times.
//! * [`host`] — the end hosts' per-packet processing delay.
//! * [`cc`] — congestion control algorithms behind one trait.
//!
//! # Model and the choices it makes
//!
//! * **Path.** Senders → random-loss stage (loss and per-bit corruption of an
//!   (MSS+40)-byte packet combined, drawn as geometric gaps per flow group) →
//!   bottleneck (rate, drop-tail byte buffer; a packet is always accepted
//!   into an empty queue) → RTT/2 propagation → receiver. ACKs return in
//!   RTT/2 plus the sender's and receiver's `extra_rtt_s` (access delay is
//!   all put on the unqueued reverse path), never lost or queued. Sender
//!   NICs are infinitely fast, so bursts meet only at the bottleneck.
//!   Departure = max(arrival, previous departure) + size/rate is computed at
//!   enqueue; the forward pipe and ACK pipes are FIFOs polled by the event
//!   loop, so no heap event is needed per packet.
//! * **Wire size** of a segment = MSS + 52 (IP + TCP with the timestamp
//!   option Linux uses) when that fits the MTU, else MSS + 40, plus the
//!   14-byte Ethernet header at the bottleneck; random corruption is applied
//!   to (MSS + 40)·8 bits as RunPlan specifies ([`wire`]).
//! * **Sequence space in segments.** All segments of a stream carry one
//!   MSS; RPC responses are rounded up to whole segments.
//! * **Connection start.** The handshake is not simulated: at `start_s`
//!   plus 3 µs per stream plus a seeded random offset below 1 ms (so
//!   loss-free repetitions differ and no stream wins by its index; see
//!   `scenario::START_JITTER`) the sender has an RTT sample equal to the base RTT
//!   plus access delay (Linux's SYN-ACK sample), then the CCA is
//!   initialised (tcp_init_transfer) and IW 10 is sent.
//! * **Receive window** = rmem_max / 2 (tcp_adv_win_scale = 1), constant:
//!   receive-buffer autotuning is assumed to have reached rmem_max.
//! * **Send buffer**: unacked + unsent bytes ≤ wmem_max (payload bytes, no
//!   skb truesize overhead); a send-buffer-limited sender is marked
//!   app-limited like Linux's tcp_rate_check_app_limited.
//! * **Receiver**: ACK every second full segment, delayed ACK 40 ms,
//!   SACK (a most-recently-changed list of 4 blocks, 3 on the wire beside
//!   timestamps; tcp_sack_new_ofo_skb) for out-of-order data or a filled
//!   hole, D-SACK for duplicates, quick-ACK mode for the first
//!   min(wnd/2, 16) segments and after idle > RTO. Out-of-order data is
//!   ACKed as Linux's SACK compression does (__tcp_ack_snd_check): 3
//!   immediate duplicate ACKs, then up to tcp_comp_sack_nr = 44 folded
//!   into one, held at most min(1 ms, RTT/20); a withheld ACK is flushed
//!   with the old SACK list before a new block pushes one out. GRO at
//!   the receiver when the receiving host has it (`gro`, off by default):
//!   one ACK per coalesced super-packet of up to 64 KB (tcp/receiver/gro.rs).
//! * **Loss recovery**: SACK + RACK-TLP (RFC 8985) with Linux's reo_wnd
//!   rules, PRR (RFC 6937), RTO = srtt + max(4·mdev, 200 ms) with
//!   exponential backoff, timers on a 1 ms jiffy grid, D-SACK undo,
//!   F-RTO after an RTO (RFC 5682 §3.1, tcp/loss.rs). No timestamp-based
//!   undo (Eifel). `conform/` runs the sender under packetdrill scripts
//!   (docs/conformance.md).
//! * **Timestamps** (RFC 7323, tcp/timestamps.rs) when the option fits the
//!   MTU: segments carry a millisecond TSval, ACKs echo ts_recent, and an
//!   ACK of retransmitted data is timed by its echo (tcp_ack_update_rtt).
//! * **ECN** (RFC 3168, tcp/ecn.rs): negotiated from both hosts'
//!   net.ipv4.tcp_ecn or asked for by the CCA (TCP_CONG_NEEDS_ECN, DCTCP);
//!   ECT data, ECE echoed until CWR (or DCTCP's CE-state mirroring), the
//!   CWR reduction on ECE; the bottleneck marks CE at a threshold
//!   (`Aqm::CeThreshold`, DCTCP's K) or by CoDel in fq_codel (path.rs).
//! * **End hosts** are ideal unless a host has `processing_jitter_s`
//!   ([`host`]): then each data segment (or GRO unit) reaching the
//!   receiver and each ACK reaching the sender waits an exponential delay
//!   of that mean, from the stream's own seeded stream, in order per flow.
//! * **Pacing** (tcp_wstamp_ns) when the CCA sets `pacing_enabled` or the
//!   host has `stream_rate_cap_bps` (sk_max_pacing_rate), in TSO bursts of
//!   ~1 ms of data (tcp_tso_autosize, 2..64 KB).
pub mod bpf;
pub mod app;
pub mod capture;
pub mod app_rate;
pub mod cc;
pub mod codel;
pub mod conform;
pub mod engine;
pub mod event;
pub mod fq_codel;
pub mod host;
pub mod host_plan;
pub mod path;
pub mod path_plan;
pub mod plan;
pub mod rng;
pub mod scenario;
pub mod tcp;
pub mod trace;
pub mod transfer;
pub mod units;
pub mod wire;
