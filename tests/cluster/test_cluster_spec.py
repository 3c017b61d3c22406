"""--cluster SPEC parsing, the Slurm job script a slurm: cluster submits, and
the refusals that come before anything is submitted."""

from __future__ import annotations

import pytest

from fatpipe import spec as spec_mod
from fatpipe.cluster import ClusterError, ClusterSpecError, parse_cluster_spec, slurm_job_script
from fatpipe.cluster.runner import machine_tokens
from fatpipe.study import plan_runs


def test_local_takes_a_worker_count_and_defaults_to_the_cpus():
    assert parse_cluster_spec("local:3").workers == 3
    assert parse_cluster_spec("local").workers >= 1


@pytest.mark.parametrize("text, named", [
    ("local:0", "N = '0'"), ("local:x", "N = 'x'"), ("tcp://nohost", "tcp://HOST:PORT"),
    ("ssh:onlyone", "at least one worker host"), ("ssh:a,b,colour=red", "'colour=red'"),
    ("slurm:jobs=0", "jobs = '0'"), ("slurm:queue", "'queue'"), ("slurm:exclusive=1,processes=2", "processes=1"),
    ("kubernetes:x", "local[:N], tcp://HOST:PORT"), ("ssh:a,,b", "empty item"),
])
def test_a_bad_spec_is_refused_naming_the_part_and_what_is_allowed(text, named):
    with pytest.raises(ClusterSpecError) as e:
        parse_cluster_spec(text)
    assert named in str(e.value)


def test_ssh_separates_hosts_from_options():
    spec = parse_cluster_spec("ssh:sched,w1,w2,ssh_config=/tmp/cfg,python=/opt/py/bin/python3")
    assert spec.hosts == ("sched", "w1", "w2")
    assert spec.options == {"ssh_config": "/tmp/cfg", "python": "/opt/py/bin/python3"}


def test_existing_scheduler_address_is_kept_verbatim():
    assert parse_cluster_spec("tcp://10.1.2.3:8786").address == "tcp://10.1.2.3:8786"


def test_slurm_job_script_carries_every_option_and_the_kernel_token():
    pytest.importorskip("dask_jobqueue")
    spec = parse_cluster_spec("slurm:jobs=4,cores=8,processes=1,memory=16GB,walltime=02:30:00,queue=lfn,"
                              "account=netlab,python=/opt/fp/bin/python3,exclusive=1,directive=--constraint=ib")
    script = slurm_job_script(spec, {"kernel": 1}, scheduler="tcp://10.0.0.5:8786")
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    for directive in ("#SBATCH -J fatpipe-worker", "#SBATCH -p lfn", "#SBATCH -A netlab",
                      "#SBATCH --cpus-per-task=8", "#SBATCH -t 02:30:00", "#SBATCH --constraint=ib",
                      "#SBATCH --exclusive"):
        assert directive in lines, f"{directive!r} missing from:\n{script}"
    assert any(line.startswith("#SBATCH --mem=") for line in lines), script
    command = next(line for line in lines if "distributed.cli.dask_worker" in line)
    assert command.startswith("/opt/fp/bin/python3 -m distributed.cli.dask_worker tcp://10.0.0.5:8786")
    assert "--resources kernel=1" in command and "--nthreads 8" in command


def test_slurm_job_script_without_exclusive_offers_no_token():
    pytest.importorskip("dask_jobqueue")
    script = slurm_job_script(parse_cluster_spec("slurm:"), {"kernel": 1})
    assert "--resources" not in script and "--exclusive" not in script
    assert "#SBATCH -t 01:00:00" in script.splitlines()


def _plans(tmp_path, backend: str, extra: str = ""):
    study = tmp_path / "s.toml"
    study.write_text(f"""version = 1
[study]
name = "t"
backends = ["{backend}"]
duration = "1s"
warmup = "0s"
[path]
rate = "10Mbit"
rtt = "10ms"
[[flows]]
cc = "cubic"
{extra}""")
    spec, raw = spec_mod.load(study)
    return plan_runs(spec, raw)


def test_hosts_backend_refuses_a_cluster(tmp_path):
    plans = _plans(tmp_path, "hosts", '[testbed]\n'
                   '[testbed.hosts.a]\nssh = "a"\naddress = "10.0.0.1"\ninterface = "eth0"\nrole = "s1"\n'
                   '[testbed.hosts.b]\nssh = "b"\naddress = "10.0.0.2"\ninterface = "eth0"\nrole = "receiver"\n')
    with pytest.raises(ClusterError, match="backend 'hosts' runs on one testbed"):
        machine_tokens(plans)


def test_kernel_runs_ask_for_the_kernel_token_and_sim_runs_for_none(tmp_path):
    assert machine_tokens(_plans(tmp_path, "kernel")) == {"kernel": 1}
    assert machine_tokens(_plans(tmp_path, "sim")) == {}
