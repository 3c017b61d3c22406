"""The sender sockets' shared parts (standard library only: imported by
engine.py and rpc_engine.py inside the namespaces, where the fatpipe
package is not needed): one TCP_INFO sample of a socket as a JSON line
(parsed on the host by tcpinfo.py), and the socket's pacing options."""

from __future__ import annotations

import base64
import json
import socket
import struct

SO_MAX_PACING_RATE = 47  # include/uapi/asm-generic/socket.h
# The max pacing rate (bytes/s) of a socket that is paced but not capped: far
# above any path rate. Linux reads 64 bits when given 8 bytes (sk_setsockopt,
# on 64-bit kernels), older kernels the first 32; neither half is ~0U, the
# value that means "no limit" and would leave the socket unpaced.
UNCAPPED_PACING_BYTES_PER_S = 2**63 - 2


def max_pacing_rate_bytes_per_s(cfg: dict) -> int | None:
    """SO_MAX_PACING_RATE for a sender socket of `cfg` (pure, tested): the
    per-stream cap (stream_rate_cap_bps) when there is one, else
    UNCAPPED_PACING_BYTES_PER_S when the sender is paced internally
    (``internal_pacing``: qdisc.sender_qdisc), else None (not set)."""
    if cfg.get("stream_rate_cap_bps"):
        return int(cfg["stream_rate_cap_bps"] / 8)
    if cfg.get("internal_pacing"):
        return UNCAPPED_PACING_BYTES_PER_S
    return None


def apply_pacing(sock: socket.socket, cfg: dict) -> None:
    """Set SO_MAX_PACING_RATE (max_pacing_rate_bytes_per_s) on `sock`.
    Any value other than ~0 paces the socket: sk_setsockopt() moves
    sk_pacing_status from SK_PACING_NONE to SK_PACING_NEEDED (Linux >= 4.13,
    net/core/sock.c), tcp_needs_internal_pacing() is then true and
    tcp_write_xmit() holds each skb until tcp_wstamp_ns, which
    tcp_update_skb_after_send() advances by len / sk_pacing_rate
    (net/ipv4/tcp_output.c); tcp_update_pacing_rate() keeps sk_pacing_rate
    at the CCA's rate, min'd with the max (net/ipv4/tcp_input.c)."""
    rate = max_pacing_rate_bytes_per_s(cfg)
    if rate is None:
        return
    # An int where one holds the value (what every kernel reads), else 64 bits.
    value = rate if rate < 2**31 else struct.pack("=Q", rate)
    sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, value)

TCP_INFO_BYTES = 512  # larger than struct tcp_info; the kernel returns its size
# getsockopt(IPPROTO_TCP, TCP_CC_INFO) (include/uapi/linux/tcp.h): the CCA's
# get_info() record, union tcp_cc_info (BBR: struct tcp_bbr_info); empty for
# CCAs without one.
TCP_CC_INFO = 26
TCP_CC_INFO_BYTES = 64  # larger than union tcp_cc_info
TCP_CONGESTION_BYTES = 16  # TCP_CA_NAME_MAX


def sample_line(sock: socket.socket, t_s: float, stream: int) -> str:
    """{"t_s", "stream", "tcp_info", "cc_info"} (raw bytes base64) and "cc",
    the socket's CCA as the kernel names it (TCP_CONGESTION), + newline."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_BYTES)
    try:
        cc = sock.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, TCP_CC_INFO_BYTES)
    except OSError:
        cc = b""
    name = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, TCP_CONGESTION_BYTES)
    return json.dumps({"t_s": t_s, "stream": stream, "tcp_info": base64.b64encode(raw).decode(),
                       "cc_info": base64.b64encode(cc).decode(),
                       "cc": name.split(b"\0", 1)[0].decode(errors="replace")}) + "\n"
