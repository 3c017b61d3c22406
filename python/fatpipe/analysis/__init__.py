"""Metrics and analytic models over the result tables.

Every function is pure: pandas DataFrames or numbers in, DataFrames or
numbers out. The rules each metric follows are stated in its module.
"""

from .collapse import collapse_intervals, collapse_points, run_collapses
from .fairness import against_cubic, against_cubic_runs, fairness_summary, jain_index, run_fairness
from .models import cubic_bps, mathis_bps, packet_loss_probability
from .stats import grid_summary, mean_ci, point_columns, t_quantile
from .streams import improvement_by_streams, improvement_factors, stream_factors

__all__ = [
    "collapse_intervals", "collapse_points", "run_collapses",
    "against_cubic", "against_cubic_runs", "fairness_summary", "jain_index", "run_fairness",
    "cubic_bps", "mathis_bps", "packet_loss_probability",
    "grid_summary", "mean_ci", "point_columns", "t_quantile",
    "improvement_by_streams", "improvement_factors", "stream_factors",
]
