"""A warm worker's cgroups, made for its first run and renewed for each next one.

Renewing must leave a run exactly where a cgroup made for it would: held to
its own limits, measured from zero (peak memory, CPU time, out-of-memory
kills, refused forks), with nothing of the run before it inside. Where that
cannot be had — a process left, memory still charged, other limits — new
cgroups are made. The end-to-end tests make runs through
:func:`codegenie.eval.rubrics.run_rubrics` in one warm worker; the others
drive :class:`~codegenie.eval._sandbox.cgroups.KeptCgroup` with plain
processes that join its cgroups. Skipped where no cgroup can be made (not
root, no delegated subtree). No test asserts a time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegenie.eval import rubrics
from codegenie.eval._sandbox import cgroups
from codegenie.eval._sandbox.cgroups import KeptCgroup, RunCgroup
from codegenie.eval._sandbox.limits import Limits

from .warm import bench, bwrap, grade, spy

__all__ = ("bwrap", "spy")  # fixtures

LIMITS = Limits(memory=64, processes=16, cpu_time=30)


@pytest.fixture
def controllers() -> frozenset[str]:
    """The controllers a run's cgroup can have here; skip where memory and pids cannot."""
    found = frozenset(cgroups.discover())
    if not {"memory", "pids", "cpu"} <= found:
        pytest.skip(f"no memory and pids cgroups can be made here (only {sorted(found)})")
    return found


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[list[Path]]:
    """The directories of every set of run cgroups made (not renewed) while the test runs."""
    found: list[list[Path]] = []
    original = RunCgroup.create.__func__  # type: ignore[attr-defined]

    def create(cls: type[RunCgroup], /, *args: object, **kwargs: object) -> RunCgroup:
        cgroup: RunCgroup = original(cls, *args, **kwargs)
        found.append(sorted(path for _, path in cgroup.directories.values()))
        return cgroup

    monkeypatch.setattr(RunCgroup, "create", classmethod(create))
    return found


def _ours() -> list[Path]:
    """The run cgroups this process has made that still exist, in every hierarchy."""
    prefix = f"codegenie-run-{os.getpid()}-"
    return [
        path
        for hierarchy in cgroups.discover().values()
        for path in hierarchy.parent.glob(prefix + "*")
    ]


# -- end to end: runs of one worker -------------------------------------------------------

# Each case does one thing; the last reports its own readings through its verdict's score.
SEQUENCE = r"""
import json, os, sys, time
case = os.path.basename(sys.argv[1])
if case == "a-memory":
    hoard = []
    while True:
        hoard.append(bytearray(8 << 20))
elif case == "b-forks":
    children = []
    for _ in range(64):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
    print(json.dumps({"passed": True, "reason": f"{len(children)} forked"}))
elif case == "c-cpu":
    started = time.process_time()
    while time.process_time() - started < 0.5:
        pass
    print(json.dumps({"passed": True, "reason": "busy"}))
else:
    print(json.dumps({"passed": True, "reason": "quiet"}))
"""


def test_each_run_of_a_worker_is_limited_and_measured_from_zero_in_renewed_cgroups(
    tmp_path: Path,
    bwrap: rubrics.Sandbox,
    spy: list[str],
    controllers: frozenset[str],
    made: list[list[Path]],
) -> None:
    """An out-of-memory kill, refused forks and CPU time of one run are not the next one's."""
    names = ["a-memory", "b-forks", "c-cpu", "d-quiet", "e-quiet"]
    rubric, cases = bench(tmp_path, SEQUENCE, names, limits=LIMITS)
    results = grade(rubric, cases, bwrap)
    assert spy == names  # one worker made them all, one after the other
    assert len(made) == 1, made  # the cgroups were made once, then renewed
    memory, forks, busy, quiet, again = results
    assert (memory.status, memory.limit) == ("error", "memory"), memory.reason
    assert (forks.status, forks.limit) == ("error", "processes"), forks.reason
    assert busy.status == "passed"
    assert busy.cpu_s is not None
    assert busy.cpu_s >= 0.5
    for result in (quiet, again):
        assert (result.status, result.reason) == ("passed", "quiet")
        assert result.limit is None
        # The CPU time is the run's own (the busy run's 0.5 s is not in it), and so is
        # the peak (the first run stood at 64 MiB).
        assert result.cpu_s is not None
        assert result.cpu_s < 0.45
        assert result.peak_memory_mib is not None
        assert result.peak_memory_mib < 48
    assert _ours() == []  # removed once the batch ended


def test_a_run_after_one_that_left_a_process_in_its_cgroups_starts_in_new_ones(
    tmp_path: Path,
    bwrap: rubrics.Sandbox,
    spy: list[str],
    controllers: frozenset[str],
    made: list[list[Path]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the harness cannot empty is never renewed: the next run gets cgroups of its own."""
    original = RunCgroup.empty_out
    monkeypatch.setattr(RunCgroup, "empty_out", lambda self: original(self) and False)
    rubric, cases = bench(tmp_path, SEQUENCE, ["d-quiet", "e-quiet"], limits=LIMITS)
    results = grade(rubric, cases, bwrap)
    assert spy == ["d-quiet", "e-quiet"]
    assert [r.status for r in results] == ["passed", "passed"]
    assert len(made) == 2
    assert made[0]
    assert not set(made[0]) & set(made[1])
    assert _ours() == []


# -- KeptCgroup with plain processes ------------------------------------------------------


def _joined(cgroup: RunCgroup, code: str) -> subprocess.Popen[bytes]:
    """Start ``python -c code`` in ``cgroup`` (it joins before it runs)."""
    files = cgroup.join_files

    def join() -> None:
        for file in files:
            file.write_text("0", encoding="ascii")

    return subprocess.Popen([sys.executable, "-c", code], preexec_fn=join)  # noqa: PLW1509 - a test's own single-threaded child


@pytest.fixture
def kept(controllers: frozenset[str]) -> Iterator[KeptCgroup]:
    made = KeptCgroup()
    yield made
    made.close()


def test_renewed_cgroups_are_the_same_and_read_zero(kept: KeptCgroup) -> None:
    first = kept.take(LIMITS)
    child = _joined(first, "x = bytearray(32 << 20); import time; time.sleep(0.05)")
    assert child.wait() == 0
    peak = first.peak_memory()
    assert peak is not None
    assert peak >= 32 << 20
    kept.give_back(first)
    second = kept.take(LIMITS)
    assert second is first
    assert second.peak_memory() == 0
    assert 0 <= second.charged_before <= cgroups.RENEWED_CHARGE
    assert second.cpu_time() == 0
    assert (second.oom_kills(), second.refused_forks()) == (0, 0)


def test_a_process_left_in_them_is_killed_when_they_are_given_back(kept: KeptCgroup) -> None:
    cgroup = kept.take(LIMITS)
    child = _joined(cgroup, "import time; time.sleep(60)")
    try:
        assert not cgroup.renew(LIMITS)  # a process in it: not fresh
        kept.give_back(cgroup)
        assert child.wait(timeout=30) == -signal.SIGKILL
        assert kept.take(LIMITS) is cgroup
    finally:
        child.kill()
        child.wait()


def test_memory_still_charged_to_them_means_new_cgroups(kept: KeptCgroup, tmp_path: Path) -> None:
    """A file on a tmpfs written from inside stays charged after its writer is gone: 16 MiB."""
    shm = Path("/dev/shm")
    if not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm")
    left = shm / f"codegenie-test-{os.getpid()}"
    cgroup = kept.take(LIMITS)
    directories = dict(cgroup.directories)
    try:
        code = f"open({str(left)!r}, 'wb').write(b'x' * (16 << 20))"
        assert _joined(cgroup, code).wait() == 0
        kept.give_back(cgroup)
        renewed = kept.take(LIMITS)
        assert renewed is not cgroup
        assert renewed.directories != directories
        assert not any(path.exists() for _, path in directories.values())  # removed
    finally:
        left.unlink(missing_ok=True)


def test_other_limits_mean_new_cgroups(kept: KeptCgroup) -> None:
    cgroup = kept.take(LIMITS)
    kept.give_back(cgroup)
    other = kept.take(Limits(memory=None, processes=None))  # a CPU cgroup only
    assert other is not cgroup
    assert other.controllers == frozenset({"cpu"})
    kept.give_back(other)
    again = kept.take(Limits(memory=None, processes=None))
    assert again is other


def test_renewed_cgroups_take_the_new_limits(kept: KeptCgroup) -> None:
    cgroup = kept.take(Limits(memory=64, processes=16))
    kept.give_back(cgroup)
    renewed = kept.take(Limits(memory=128, processes=8))
    assert renewed is cgroup
    version, directory = renewed.directories["pids"]
    assert (directory / "pids.max").read_text().strip() == "8"
    version, directory = renewed.directories["memory"]
    limit = "memory.limit_in_bytes" if version == 1 else "memory.max"
    assert int((directory / limit).read_text()) == 128 << 20


def test_close_removes_what_is_kept(controllers: frozenset[str]) -> None:
    kept = KeptCgroup()
    cgroup = kept.take(LIMITS)
    paths = [path for _, path in cgroup.directories.values()]
    assert paths
    kept.give_back(cgroup)
    kept.close()
    assert not any(path.exists() for path in paths)
    kept.close()  # twice: nothing left, nothing raised
