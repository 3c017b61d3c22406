"""The Linux path model both Linux backends build: real Linux TCP over a
path of tc qdiscs and fatpipe's NFQUEUE delay line (fatpipe-linkem).

Everything here is side-effect free to import and, apart from cmd.py's
runners and workspace_binary.py's cargo build, pure: it turns a run plan
into the path's configuration (config.py), tc and linkem argument lists
(qdisc.py, linkem.py), the traffic engine's configs and the parsers of
what it and the tools print (flows.py, parse.py, tcpinfo.py), and the
path's counters (stats.py). The backends that build such a path in
network namespaces or on remote hosts import it; nothing here imports a
backend, registers cleanup actions or loads BPF programs.

engine.py, rpc_engine.py and sampling.py are the traffic engine itself:
programs run by path on the end hosts (standard library only), not
modules of this package.
"""
