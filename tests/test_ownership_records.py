"""Ownership records of the kernel backend (no root needed: a private
temporary state directory stands in for /run/fatpipe)."""

import json
import os
import subprocess
import sys
import time

import pytest

from fatpipe.backends.kernel import ownership
from fatpipe.backends.kernel.ownership import OwnershipRecord, UnsafeStateDir, load_records, parse_record
from fatpipe.backends.kernel.path import MAX_RATE_BPS, rate_above_ceiling


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    return d


def test_process_start_time_tells_a_recycled_pid_from_the_owner():
    me = ownership.process_start_ticks(os.getpid())
    assert isinstance(me, int) and me > 0
    assert ownership.same_process(os.getpid(), me)
    assert not ownership.same_process(os.getpid(), me + 1), "another start time must not count as the same process"
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    ticks = ownership.process_start_ticks(child.pid)
    deadline = time.monotonic() + 10
    while ownership._stat_fields(child.pid)[0] != "Z":  # exited, not yet reaped
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.01)
    assert not ownership.same_process(child.pid, ticks), "a zombie (exited, unreaped) counts as gone"
    child.wait()
    assert ownership.process_start_ticks(child.pid) is None, "an exited (reaped) process has no start time"


def test_a_record_is_written_before_and_forgotten_after_its_resources(state_dir):
    rec = OwnershipRecord.for_this_process(f"fp-{os.getpid()}-7", state_dir)
    assert not rec.path.exists(), "no file before anything is claimed"
    rec.claim_namespace(f"fp-{os.getpid()}-7-r")
    rec.claim_iptables_rule(f"fp-{os.getpid()}-7-r", ["iptables", "-w", "-A", "FORWARD", "-j", "NFQUEUE"])
    saved = json.loads(rec.path.read_text())
    assert saved["owner"]["pid"] == os.getpid() and saved["namespaces"] == [f"fp-{os.getpid()}-7-r"], saved
    assert len(saved["iptables"]) == 1, saved
    [loaded] = load_records(state_dir)
    assert loaded.owner_alive(), "this process owns the record and is alive"
    rec.release_namespace(f"fp-{os.getpid()}-7-r")
    assert not rec.path.exists(), f"record left after its last namespace went: {list(state_dir.iterdir())}"


def test_a_record_may_only_claim_namespaces_under_its_own_prefix(state_dir):
    rec = OwnershipRecord.for_this_process(f"fp-{os.getpid()}-1", state_dir)
    with pytest.raises(ValueError, match="not under this run's prefix"):
        rec.claim_namespace("fp-lab")
    with pytest.raises(ValueError, match="not a namespace of this run"):
        rec.claim_iptables_rule(f"fp-{os.getpid()}-1-r", ["iptables", "-A", "FORWARD"])


def _write(state_dir, name, data):
    (state_dir / name).write_text(json.dumps(data) if not isinstance(data, str) else data)


def _good(pid=4242):
    return {"version": 1, "prefix": f"fp-{pid}-0", "created_at": "x", "owner": {"pid": pid, "start_ticks": 99},
            "namespaces": [f"fp-{pid}-0-r"], "iptables": [], "linkem": [{"pid": 5, "start_ticks": 6}]}


@pytest.mark.parametrize("change, why", [
    (lambda d: d.update(namespaces=["fp-lab"]), "namespaces"),
    (lambda d: d.update(namespaces=["fp-4242-0-r/../x"]), "namespaces"),
    (lambda d: d.update(owner={"pid": 1, "start_ticks": 99}), "does not match prefix"),
    (lambda d: d.update(owner={"pid": True, "start_ticks": 99}), "does not match prefix"),
    (lambda d: d.update(prefix="fp-lab"), "prefix"),
    (lambda d: d.update(version=2), "version"),
    (lambda d: d.update(linkem=[{"pid": "5", "start_ticks": 6}]), "linkem"),
    (lambda d: d.update(iptables=[{"namespace": "fp-other-0-r", "rule": ["iptables"]}]), "iptables"),
])
def test_a_record_that_names_what_is_not_its_own_is_unreadable(state_dir, change, why):
    data = _good()
    change(data)
    _write(state_dir, f"{_good()['prefix']}.json", data)
    [got] = load_records(state_dir)
    assert isinstance(got, ownership.Unreadable), f"accepted a record with a bad {why}: {got}"
    assert why in got.reason, got.reason


def test_records_are_read_only_from_files_named_after_their_prefix(state_dir):
    _write(state_dir, "fp-4242-0.json", _good())
    _write(state_dir, "renamed.json", _good())
    _write(state_dir, "fp-1-0.json", "{not json")
    got = load_records(state_dir)
    assert [type(g).__name__ for g in got] == ["Unreadable", "OwnershipRecord", "Unreadable"], got
    assert isinstance(parse_record(_good(), state_dir / "fp-4242-0.json"), OwnershipRecord)


def test_a_state_dir_others_can_write_to_is_not_trusted(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    with pytest.raises(UnsafeStateDir, match="writable by nobody else"):
        load_records(loose)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "state-real", target_is_directory=True)
    (tmp_path / "state-real").mkdir(mode=0o700)
    with pytest.raises(UnsafeStateDir, match="not a directory"):
        load_records(link)
    assert load_records(tmp_path / "absent") == [], "no state dir: no records"


def test_kernel_rates_above_the_ceiling_are_refused_naming_rate_and_ceiling():
    why = rate_above_ceiling(100e12)
    assert why is not None and "100 Tbit/s" in why and "10 Gbit/s" in why and "veth" in why, why
    assert rate_above_ceiling(MAX_RATE_BPS) is None
    assert rate_above_ceiling(1e9) is None
