"""How long a grade takes to end once it is told to stop, on a loaded machine (issue 39, point 7).

``python benchmarks/stop.py [ROUNDS [CASES]]`` (default 5 and 6) prints
run.py's table; ``--modes plain,warm,ray`` (default: those whose
requirements are here) and ``--signal INT|TERM|HUP`` choose what is measured.

Each round starts ``codegenie-bench grade`` on a bench of ``CASES`` cases
whose rubric replaces itself with a process that ignores ``SIGINT`` and
``SIGTERM`` and sleeps (it never decides), at ``--jobs 2``, while two
busy-loop processes keep both CPUs of this machine loaded. Once two of
those processes run (found by the marker their command line holds), the
command gets the signal; the figure is the time from the signal to the
command's exit, as a shell would wait for it. Each round then checks what
the stop must leave: the exit status (128 + the signal), no rubric
process, nothing in the command's ``TMPDIR`` (a fresh directory a round);
a round that leaves anything is reported and the script exits 1.

- ``plain``: the local executor, bubblewrap, no warm worker
  (``CODEGENIE_WARM_WORKERS=0``).
- ``warm``: the local executor, bubblewrap and its warm workers (the default).
- ``ray``: ``--executor ray``, the local Ray instance the command starts.
- ``none``: the local executor, ``--sandbox none`` (the rubric in a process
  group of its own).

``--busy N`` sets the number of busy loops (default 2): on a machine other
work already loads, a local Ray instance may not start at all under two
more (its raylet gives up waiting for its agents).

The target is 2 s. Nothing is a test: no test asserts a time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import PYTHON, SCRIPT, Row, load_average, render
else:
    from _common import PYTHON, SCRIPT, Row, load_average, render

SLUG = "stopper"
REGISTRATION = """\
from codegenie.eval import register_task_class


@register_task_class("stopper", description="Never decides: for measuring a stop.")
class Stopper:
    pass
"""
# The rubric becomes a process that names the marker, ignores the signals a stop sends
# first, and sleeps: only a kill ends it.
RUBRIC = """\
import os, pathlib, sys
marker = (pathlib.Path(sys.argv[2]) / "marker.txt").read_text().strip()
code = (
    "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"
)
os.execv(sys.executable, [sys.executable, "-c", code, marker])
"""
BUSY = "while True: pass"
MODES = ("plain", "warm", "ray", "none")
_WAIT_S = 300.0


def write_bench(base: Path, cases: int, marker: str) -> Path:
    """Write a bench of one task class of ``cases`` cases and their candidates; return its root."""
    root = base / "home"
    package = root / "bench" / SLUG
    (package / "cases").mkdir(parents=True)
    (root / "bench.toml").write_text(
        f'schema-version = 1\n\n[task-classes.{SLUG}]\nmodule = "bench.{SLUG}.registration"\n'
        'root = "bench"\n',
        encoding="utf-8",
    )
    (package / "registration.py").write_text(REGISTRATION, encoding="utf-8")
    (package / "rubric.py").write_text(RUBRIC, encoding="utf-8")
    for index in range(cases):
        case = package / "cases" / f"case-{index:02d}"
        (case / "input").mkdir(parents=True)
        (case / "expected").mkdir()
        (case / "case.toml").write_text("timeout = 3600\n", encoding="utf-8")
        candidate = root / "candidates" / case.name
        candidate.mkdir(parents=True)
        (candidate / "marker.txt").write_text(marker + "\n", encoding="utf-8")
    return root


def processes_naming(marker: str) -> list[int]:
    """The live processes one of whose arguments is ``marker``."""
    found = []
    wanted = marker.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as file:
                if wanted in file.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def one_round(mode: str, base: Path, cases: int, signum: int) -> tuple[float, list[str]]:
    """Start a grade in ``mode``, signal it once two rubrics run; return (seconds, leftovers)."""
    marker = f"codegenie-stop-{os.getpid()}-{time.monotonic_ns()}"
    root = write_bench(base, cases, marker)
    tmp = base / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(base / "cache")}
    command = [SCRIPT, "grade", SLUG, "candidates", "--jobs", "2", "--no-cache"]
    if mode == "plain":
        env["CODEGENIE_WARM_WORKERS"] = "0"
    elif mode == "ray":
        command += ["--executor", "ray"]
        env.pop("RAY_ADDRESS", None)
    elif mode == "none":
        command += ["--sandbox", "none"]
    process = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + _WAIT_S
        while len(processes_naming(marker)) < 2:
            if process.poll() is not None or time.monotonic() > deadline:
                err = process.stderr.read().decode() if process.stderr else ""
                raise SystemExit(f"{mode}: the rubrics never started: {err[-2000:]}")
            time.sleep(0.05)
        time.sleep(0.2)  # the runs settled (the rubric's handlers in place)
        started = time.perf_counter()
        process.send_signal(signum)
        process.wait(timeout=_WAIT_S)
        elapsed = time.perf_counter() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    left = []
    if process.returncode != 128 + signum:
        err = process.stderr.read().decode() if process.stderr else ""
        left.append(f"exit {process.returncode}, not {128 + signum}: {err[-500:]}")
    left += [f"process {pid}" for pid in processes_naming(marker)]
    left += [f"{tmp}/{name}" for name in sorted(os.listdir(tmp))]
    return elapsed, left


def measure(
    modes: list[str], rounds: int, cases: int, signum: int, loops: int = 2
) -> tuple[list[Row], list[str]]:
    """Measure ``rounds`` stops of each mode under ``loops`` busy loops; return rows, leftovers."""
    busy = [subprocess.Popen([PYTHON, "-c", BUSY]) for _ in range(loops)]
    problems: list[str] = []
    rows = []
    try:
        for mode in modes:
            times = []
            for _ in range(rounds):
                base = Path(tempfile.mkdtemp(prefix="cg-stop-"))
                try:
                    elapsed, left = one_round(mode, base, cases, signum)
                finally:
                    shutil.rmtree(base, ignore_errors=True)
                times.append(elapsed * 1e3)
                problems += [f"{mode}: {what}" for what in left]
            name = signal.Signals(signum).name
            rows.append(
                Row(
                    f"grade --jobs 2 ({mode}): from {name} to the command's exit, "
                    f"{cases} rubrics that ignore SIGINT and SIGTERM, {loops} busy loops",
                    cases,
                    statistics.median(times),
                    2000.0,
                    "2 s",
                    "<= 2 s",
                    1.0,
                    note=f"min {min(times):.0f} ms, max {max(times):.0f} ms",
                )
            )
    finally:
        for process in busy:
            process.kill()
            process.wait()
    return rows, problems


def _available() -> list[str]:
    modes = ["plain", "warm", "none"]
    try:
        import ray  # noqa: F401 - only whether the extra is there
    except ImportError:
        return modes
    return [*modes, "ray"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=5)
    parser.add_argument("cases", nargs="?", type=int, default=6)
    parser.add_argument("--modes", default=",".join(_available()))
    parser.add_argument("--signal", default="INT", choices=("INT", "TERM", "HUP"))
    parser.add_argument("--busy", type=int, default=2, help="busy-loop processes (default 2)")
    args = parser.parse_args(argv)
    modes = [mode for mode in args.modes.split(",") if mode]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown modes {', '.join(unknown)}: choose from {', '.join(MODES)}")
    signum = int(getattr(signal, f"SIG{args.signal}"))
    started = load_average()
    rows, problems = measure(modes, args.rounds, args.cases, signum, args.busy)
    sys.stdout.write(render(rows, args.rounds, (started, load_average())))
    for problem in problems:
        sys.stdout.write(f"left behind: {problem}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
