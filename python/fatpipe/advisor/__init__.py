"""`fatpipe advise`: which CCA, how many streams, which MTU and which socket
buffers for a given path, answered by a budgeted sim sweep (docs/advise.md).

* request.py — the path and choices (flags or TOML), validated
* plan.py — candidates, timing, cost, each stage's study spec
* stages.py — running stages as studies within the wall-time budget
* rank.py — statistics, margin, harm, ranking (pure)
* findings.py — the recommendation and explanations (pure)
* advice.py — the stages in order; render.py — terminal and HTML
* measure.py — --testbed: measuring a real path with the hosts backend
"""

from .advice import Advice, run_advice
from .request import AdviseRequest, RequestError, load_request, validate_request

__all__ = ["Advice", "AdviseRequest", "RequestError", "load_request", "run_advice", "validate_request"]
