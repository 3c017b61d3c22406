"""Results made elsewhere, brought into fatpipe's tables (`fatpipe import`).

* iperf3.py — `iperf3 -J` output → per-stream series (pure parsing);
* study.py — imported runs → a study directory (spec, store, summary), the
  same tables every backend writes, so `fatpipe compare` and the report
  work on them unchanged.
"""
