"""Analytic throughput references for loss-based CCAs.

All functions take the MSS in bytes, the RTT in seconds and the per-packet
loss probability p, and return bits per second (or segments for windows).
They accept numbers or numpy arrays. p = 0 gives +inf (no loss, no limit);
pass ``cap_bps`` (the bottleneck rate) to clip.

* Mathis et al. 1997: throughput = C·MSS / (RTT·√p), C = √(3/2) ≈ 1.22.
* RFC 9438 §5 (as RFC 8312 §5 Eq. 5): with a deterministic loss every 1/p
  packets CUBIC's average window is
  ``[C·(3+β)/(4·(1−β))]^(1/4) · RTT^(3/4) / p^(3/4)`` segments,
  C = 0.4 segments/s³, β = 0.7, RTT in seconds.
* RFC 9438 §4.3 Reno-friendly region: CUBIC also tracks an AIMD window with
  α = 3(1−β)/(1+β) and factor β. An AIMD(α, β) flow under the same loss model
  averages √(α(1+β) / (2(1−β)p)) segments, which for CUBIC's α equals Reno's
  √(3/(2p)). CUBIC's response is the larger of the two windows.
"""

from __future__ import annotations

import numpy as np

from ..wire import packet_loss_probability  # noqa: F401 (re-exported: one formula, fatpipe.wire)

MATHIS_C = 1.22
CUBIC_C = 0.4  # RFC 9438 §4.2, segments / s^3
CUBIC_BETA = 0.7  # RFC 9438 §4.6


def _as_float(x):
    return np.asarray(x, dtype=float)


def _unwrap(x):
    return float(x) if np.ndim(x) == 0 else x


def _inv_root(p, power):
    p = _as_float(p)
    with np.errstate(divide="ignore"):
        return np.where(p > 0, 1.0 / np.power(np.where(p > 0, p, 1.0), power), np.inf)


def _to_bps(window_segments, mss_bytes, rtt_s, cap_bps):
    bps = _as_float(window_segments) * _as_float(mss_bytes) * 8.0 / _as_float(rtt_s)
    if cap_bps is not None:
        bps = np.minimum(bps, cap_bps)
    return _unwrap(bps)


def mathis_bps(mss_bytes, rtt_s, p, c: float = MATHIS_C, cap_bps: float | None = None):
    """Mathis throughput C·MSS·8 / (RTT·√p) in bit/s (MSS in bytes)."""
    return _to_bps(c * _inv_root(p, 0.5), mss_bytes, rtt_s, cap_bps)


def aimd_avg_window_segments(p, alpha: float, beta: float):
    """Average window of AIMD(α, β) with a loss every 1/p packets:
    √(α(1+β) / (2(1−β)p)) segments (Reno: α = 1, β = 0.5 → 1.22/√p)."""
    return _unwrap(np.sqrt(alpha * (1 + beta) / (2 * (1 - beta))) * _inv_root(p, 0.5))


def reno_friendly_window_segments(p, beta: float = CUBIC_BETA):
    """RFC 9438 §4.3: CUBIC's Reno-friendly window, α_cubic = 3(1−β)/(1+β)."""
    alpha = 3 * (1 - beta) / (1 + beta)
    return aimd_avg_window_segments(p, alpha, beta)


def cubic_avg_window_segments(rtt_s, p, c: float = CUBIC_C, beta: float = CUBIC_BETA):
    """RFC 9438 §5: [C(3+β)/(4(1−β))]^¼ · RTT^¾ / p^¾ segments."""
    k = (c * (3 + beta) / (4 * (1 - beta))) ** 0.25
    return _unwrap(k * np.power(_as_float(rtt_s), 0.75) * _inv_root(p, 0.75))


def cubic_bps(mss_bytes, rtt_s, p, c: float = CUBIC_C, beta: float = CUBIC_BETA,
              cap_bps: float | None = None):
    """CUBIC's average throughput: the larger of the cubic and Reno-friendly
    windows, times MSS·8/RTT, in bit/s."""
    w = np.maximum(_as_float(cubic_avg_window_segments(rtt_s, p, c, beta)),
                   _as_float(reno_friendly_window_segments(p, beta)))
    return _to_bps(w, mss_bytes, rtt_s, cap_bps)


def cubic_only_bps(mss_bytes, rtt_s, p, c: float = CUBIC_C, beta: float = CUBIC_BETA,
                   cap_bps: float | None = None):
    """The cubic region alone (no Reno-friendly floor), in bit/s."""
    return _to_bps(cubic_avg_window_segments(rtt_s, p, c, beta), mss_bytes, rtt_s, cap_bps)


