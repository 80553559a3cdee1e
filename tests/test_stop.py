"""A stop (Ctrl-C, SIGTERM, SIGHUP) of a grade or a check --rubrics leaves nothing behind.

The rubrics never decide: each replaces itself with a process that ignores
SIGINT and SIGTERM and sleeps, so only a kill ends it, and the command is
signalled while two of them run, at ``--jobs 2``. The command must exit
128 + the signal without a traceback, and leave no process (none names the
runs' marker, none mentions the command's directories), no cgroup of its
runs, and nothing in its ``TMPDIR`` — under bubblewrap with warm workers,
without them (each run its own bubblewrap), and without a sandbox. How
long a stop takes is measured by ``benchmarks/stop.py``, never here: these
tests only wait, under a deadline far above what a stop takes, for what
must be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from codegenie.eval._sandbox.cgroups import discover
from codegenie.eval.rubrics import choose_sandbox

from .observe import processes_with, running
from .test_grade import SLUG, World, script

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/ns/user"), reason="needs Linux namespaces"
)

_DEADLINE = 120.0

# Becomes a process whose command line names the candidate's marker, deaf to SIGINT and
# SIGTERM, asleep for an hour: only a kill ends it.
DEAF_RUBRIC = """\
import os, pathlib, sys
marker = (pathlib.Path(sys.argv[2]) / "mode.txt").read_text().strip()
code = (
    "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"
)
os.execv(sys.executable, [sys.executable, "-c", code, marker])
"""

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
# How the local executor makes a run: the sandbox option and the environment it needs.
MODES = {
    "warm": ([], {}),
    "plain": ([], {"CODEGENIE_WARM_WORKERS": "0"}),
    "none": (["--sandbox", "none"], {}),
}


def naming(marker: str) -> list[int]:
    """The live processes one of whose arguments is ``marker``."""
    found = []
    for pid in processes_with(marker):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                if marker.encode() in file.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return found


def run_cgroups_of(pids: set[int]) -> list[Path]:
    """The run cgroups made by the processes ``pids`` that are still there."""
    return [
        directory
        for hierarchy in discover().values()
        for directory in hierarchy.parent.glob("codegenie-run-*-*")
        if directory.name.split("-")[2] in {str(pid) for pid in pids}
    ]


def deaf_world(tmp_path: Path, cases: int = 4) -> tuple[World, str]:
    """A bench whose rubric never decides, with ``cases`` candidates; and their marker."""
    world = World(tmp_path)
    marker = f"codegenie-deaf-{os.getpid()}-{time.monotonic_ns()}"
    (world.package / "rubric.py").write_text(DEAF_RUBRIC, encoding="utf-8")
    for index in range(cases):
        world.case(f"case-{index}", marker)
    return world, marker


def stop_while_running(
    world: World,
    marker: str,
    command: list[str],
    signum: int,
    *,
    env: dict[str, str] | None = None,
    starting: float = _DEADLINE,
) -> tuple[int, str, set[int]]:
    """Start ``command``, signal it once two rubrics run; return its status, stderr, pids seen.

    The pids are the command's and those of the processes that made runs
    for it (the rubrics' parents, up to the command's children).
    ``env``: what the command's environment adds; ``starting``: how long
    the rubrics may take to start (a hang guard).
    """
    process = subprocess.Popen(
        [script(), *command],
        cwd=world.bench.base,
        env=world.env(**(env or {})),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + starting
        while len(naming(marker)) < 2:
            assert process.poll() is None, process.communicate()[1].decode()
            assert time.monotonic() < deadline, "the rubrics never started"
            time.sleep(0.05)
        makers = {process.pid} | _ancestors(naming(marker), process.pid)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=_DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stderr.decode(errors="replace"), makers


def _ancestors(pids: list[int], top: int) -> set[int]:
    """The ancestors of ``pids`` below ``top`` (the processes that started the runs)."""
    found: set[int] = set()
    for start in pids:
        pid = start
        while pid not in (top, 0, 1):
            try:
                with open(f"/proc/{pid}/stat", "rb") as file:
                    pid = int(file.read().rpartition(b")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                break
            found.add(pid)
    return found - {top, 0, 1}


def assert_nothing_left(world: World, marker: str, makers: set[int]) -> None:
    """No rubric, no process of the command's, no cgroup of its runs, an empty TMPDIR."""
    assert running(naming(marker), within=_DEADLINE) == []
    assert running(processes_with(str(world.base)), within=_DEADLINE) == []
    assert running(sorted(makers), within=_DEADLINE) == []
    assert run_cgroups_of(makers) == []
    assert sorted(path.name for path in world.tmp.iterdir()) == []


@pytest.fixture(scope="module")
def bubblewrap() -> None:
    try:
        choose_sandbox("bwrap")
    except Exception as exc:
        pytest.skip(f"no sandbox here: {exc}")


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_ends_a_grade_of_deaf_rubrics_and_leaves_nothing(
    tmp_path: Path, mode: str, signum: int, bubblewrap: None
) -> None:
    """SIGINT, SIGTERM or SIGHUP during rubrics that ignore them: 128 + the signal, nothing left."""
    world, marker = deaf_world(tmp_path)
    option, env = MODES[mode]
    command = ["grade", SLUG, "candidates", "--jobs", "2", "--no-cache", *option]
    status, stderr, makers = stop_while_running(world, marker, command, signum, env=env)
    assert status == 128 + signum, stderr
    assert "Traceback" not in stderr
    assert "internal error" not in stderr
    assert_nothing_left(world, marker, makers)


@pytest.mark.parametrize("mode", ["warm", "plain"])
def test_a_signal_ends_check_rubrics_and_leaves_nothing(
    tmp_path: Path, mode: str, bubblewrap: None
) -> None:
    """check --rubrics stopped while golden runs of deaf rubrics run: exit 130, nothing left."""
    world, marker = deaf_world(tmp_path, cases=0)
    # check hands each case's expected/ to the rubric: the marker is in there.
    for index in range(4):
        world.case(f"case-{index}", None)
        expected = world.cases / f"case-{index}" / "expected" / "mode.txt"
        expected.write_text(marker + "\n", encoding="utf-8")
    option, env = MODES[mode]
    command = ["check", "--rubrics", "--jobs", "2", "--no-cache", *option]
    status, stderr, makers = stop_while_running(world, marker, command, signal.SIGINT, env=env)
    assert status == 128 + signal.SIGINT, stderr
    assert "Traceback" not in stderr
    assert_nothing_left(world, marker, makers)
