#!/bin/bash
# The settings every fatpipe conformance script starts from: Linux's
# defaults where fatpipe's simulator models them, with the receive and send
# buffers and the switches Linux's own packetdrill suites use, so a script
# means the same on the simulator (`fatpipe conform`) and on a Linux host
# (packetdrill, run inside a network namespace).

# Buffers: min, default, max (bytes). 15 MB of receive buffer gives window scale 8.
sysctl -q net.ipv4.tcp_rmem="4096 540000 $((15*1024*1024))"
sysctl -q net.ipv4.tcp_wmem="4096 $((256*1024)) 4194304"

# Options offered and accepted in the handshake.
sysctl -q net.ipv4.tcp_timestamps=1
sysctl -q net.ipv4.tcp_sack=1
sysctl -q net.ipv4.tcp_window_scaling=1
sysctl -q net.ipv4.tcp_ecn=0

# Loss recovery: RACK-TLP (RFC 8985), F-RTO (RFC 5682), reordering degree 3.
sysctl -q net.ipv4.tcp_recovery=1
sysctl -q net.ipv4.tcp_early_retrans=3
sysctl -q net.ipv4.tcp_frto=2
sysctl -q net.ipv4.tcp_reordering=3

# cwnd is not reset after idle unless a script asks for it.
sysctl -q net.ipv4.tcp_slow_start_after_idle=0

# Pacing ratios of tcp_update_pacing_rate(), and the TSO floor.
sysctl -q net.ipv4.tcp_pacing_ss_ratio=200
sysctl -q net.ipv4.tcp_pacing_ca_ratio=120
sysctl -q net.ipv4.tcp_min_tso_segs=2

# No pacing below TCP on the test device.
tc qdisc replace dev tun0 root pfifo
