"""One TCP_INFO sample of a socket as a JSON line (standard library only:
imported by engine.py and rpc_engine.py inside the namespaces, where the
fatpipe package is not needed). Parsed on the host by tcpinfo.py."""

from __future__ import annotations

import base64
import json
import socket

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
