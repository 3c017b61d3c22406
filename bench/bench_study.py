"""A one-run study file on the simulator, as the benchmark scripts write
them (bench/flow_count.py, bench/ns3_compare.py)."""
from __future__ import annotations


def sim_study_toml(name: str, seconds: float, warmup_s: float, path: str, hosts: str, flows: str, *,
                   interval: str = "500ms", seed: int = 1) -> str:
    """The study's TOML: `path` and `hosts` are the [path] and
    [hosts.default] sections' lines (more sections may follow `hosts`),
    `flows` its [[flows]] tables."""
    return f"""version = 1
[study]
name = "{name}"
backends = ["sim"]
duration = "{seconds}s"
warmup = "{warmup_s}s"
seed = {seed}
interval = "{interval}"
[path]
{path}
[hosts.default]
{hosts}
{flows}"""
