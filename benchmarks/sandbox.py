"""What the rubric sandbox costs: start-up, set-up, copying versus overlaying, whole rubric runs.

``python benchmarks/sandbox.py [RUNS]`` (default 50) prints one JSON object:
the median and the minimum of every figure in milliseconds over RUNS runs
(the minimum is the cost on an idle machine; on a shared one, the median
carries the load, also printed), the variants of a measure alternating run
by run so that a drifting machine skews none of them:

- ``bare``: ``python -c pass``, as ``subprocess.run`` starts it;
- ``bwrap``: the same inside bubblewrap with the rubric policy's arguments
  (namespaces, mounts), run after run with one prepared policy;
- ``confined``: the same, confined as a run is: the head
  (``_sandbox/confining``: the run's interpreter with ``-I -S``, which seals
  the device nodes, drops the capabilities and loads the seccomp filter)
  before ``python -c pass``; its difference to ``bwrap`` is what confining
  costs a plain run;
- ``sandboxed``: a whole sandboxed run as the runner will do it: ``prepare``
  (the run's cgroups made, where this machine allows), the argv head that
  joins them and sets the rlimits (``sh``, ``prlimit``), bubblewrap,
  ``python -c pass``, then ``close`` (the cgroups removed);
- ``sandboxed-no-cgroup``: the same with ``cgroups=False`` (rlimits only);
- ``prepare``: ``prepare`` and ``close`` alone;
- ``copy-*`` and ``overlay-*``: a rubric that reads every file of a tree,
  given a copy made by the runner's own copy (``rubrics._copy_tree``,
  removed afterwards) or the original under a throw-away writable overlay
  (``--overlay-src TREE --tmp-overlay DEST``, bubblewrap 0.10 or later);
  ``small`` is 12 files of 1 KiB (a case), ``large`` 2,000 files of 25 KiB
  (50 MB, a candidate repository).

``python benchmarks/sandbox.py rubrics [CASES [RUNS]]`` (default 200 cases, 3
runs) measures what ``benchmarks/run.py`` reports for the sandbox
(:func:`rubric_rows`) and prints run.py's table: on a task class of CASES
cases with a cheap rubric (``benchmarks/cases.py``'s: it reads ``case.toml``
and two ``requirements.txt`` and prints a verdict),

- ``run_rubric`` in the sandbox (``--sandbox auto``), case by case on each
  case's ``expected/``, against the bare subprocess ``python rubric.py CASE
  CANDIDATE`` (stdout captured) and against ``run_rubric`` under ``none``,
  the three alternating case by case, RUNS passes: the median and the
  minimum over every case run; and the CPU time of each (the harness's, its
  reaped children's and, sandboxed, what the run's cgroup counted), which a
  machine's load does not inflate as it does wall-clock time;
- ``grade --jobs 1`` and ``--jobs 2`` in the sandbox, whole runs, against
  each other and against the bare subprocesses in sequence;
- what two processes at once give on this machine, the ceiling of ``--jobs
  2`` against ``--jobs 1`` (:data:`SCALING_FLOOR`): the same rubric over the
  same cases run by one warm interpreter and by two, each forking a process
  per case: unsandboxed; in fresh mount and PID namespaces only, the least a
  run is made in; and in all five namespaces a run has.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegenie.eval import TaskClassRegistry, rubrics
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._sandbox import Bubblewrap, SandboxPolicy, bubblewrap, bwrap_args, prepare
from codegenie.eval._sandbox.bwrap import RUN_FEATURES
from codegenie.eval._sandbox.seccomp import program as seccomp_program
from codegenie.eval.loader import load_cases, load_task_class

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import SCRIPT, Row, load_average, render
    from benchmarks.cases import build_case_bench
else:
    from _common import SCRIPT, Row, load_average, render
    from cases import build_case_bench

READ_ALL = (
    "import os, sys\n"
    "for d, _, fs in os.walk(sys.argv[1]):\n"
    "    for f in fs:\n"
    "        open(os.path.join(d, f), 'rb').read()\n"
)


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _run(
    argv: list[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    pass_fds: tuple[int, ...] = (),
) -> None:
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdin=subprocess.DEVNULL, pass_fds=pass_fds)


def _tree(root: Path, files: int, size: int) -> Path:
    for index in range(files):
        directory = root / f"d{index % 20}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{index}").write_bytes(os.urandom(size))
    return root


def measure(runs: int) -> dict[str, object]:
    """Return every figure of the module's docstring, in milliseconds."""
    bwrap = bubblewrap()
    work = Path(tempfile.mkdtemp(prefix="codegenie-sandbox-bench-"))
    try:
        task = work / "task"
        task.mkdir()
        python = [sys.executable, "-c", "pass"]
        fixed_run = work / "fixed"
        fixed_run.mkdir()
        fixed = prepare(SandboxPolicy("bwrap", fixed_run, task), bwrap=bwrap)
        wrapped = bwrap_args(fixed.policy, bwrap)

        def confined() -> None:
            reader, writer = os.pipe()
            try:
                os.write(writer, seccomp_program() or b"")  # a few kilobytes: the pipe holds them
                os.close(writer)
                writer = -1
                head = bwrap_args(fixed.policy, bwrap, seccomp_fd=reader)
                _run([*head, *python], fixed.env, fixed.cwd, (reader,))
            finally:
                os.close(reader)
                if writer != -1:
                    os.close(writer)

        def sandboxed() -> None:
            with prepare(SandboxPolicy("bwrap", fixed_run, task), bwrap=bwrap) as run:
                _run(run.argv(python), run.env, run.cwd, run.pass_fds)

        def rlimited() -> None:
            policy = SandboxPolicy("bwrap", fixed_run, task)
            with prepare(policy, bwrap=bwrap, cgroups=False) as run:
                _run(run.argv(python), run.env, run.cwd, run.pass_fds)

        def prepared() -> None:
            prepare(SandboxPolicy("bwrap", fixed_run, task), bwrap=bwrap).close()

        startup: dict[str, Callable[[], None]] = {
            "bare": lambda: _run(python),
            "bwrap": lambda: _run([*wrapped, *python], fixed.env, fixed.cwd),
            "confined": confined,
            "sandboxed": sandboxed,
            "sandboxed-no-cgroup": rlimited,
            "prepare": prepared,
        }
        samples: dict[str, list[float]] = {name: [] for name in startup}
        for action in startup.values():  # warm the page cache once
            action()
        for _ in range(runs):
            for name, action in startup.items():
                samples[name].append(_timed(action))
        fixed.close()
        trees = {
            "small": _tree(work / "small", 12, 1024),
            "large": _tree(work / "large", 2000, 25 * 1024),
        }
        for label, tree in trees.items():
            samples |= _copy_or_overlay(label, tree, task, work, bwrap, max(5, runs // 5))
        return {
            "median_ms": {name: _median_ms(values) for name, values in samples.items()},
            "min_ms": {name: round(min(values) * 1000, 2) for name, values in samples.items()},
            "bwrap": f"{'.'.join(map(str, bwrap.version))} ({bwrap.origin})",
            "runs": runs,
            "load_average": os.getloadavg()[0],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _copy_or_overlay(
    label: str, tree: Path, task: Path, work: Path, bwrap: Bubblewrap, runs: int
) -> dict[str, list[float]]:
    run_dir = work / f"run-{label}"
    run_dir.mkdir()
    (run_dir / "case").mkdir()
    destination = run_dir / "case" / "tree"

    def copied() -> None:
        with prepare(SandboxPolicy("bwrap", run_dir, task), bwrap=bwrap) as run:
            rubrics._copy_tree(str(tree), str(destination), "case")  # the runner's own copy
            try:
                argv = run.argv([sys.executable, "-c", READ_ALL, str(destination)])
                _run(argv, run.env, pass_fds=run.pass_fds)
            finally:
                rubrics.remove_tree(str(destination))

    # The overlay is bubblewrap 0.11's: the bundled one, where the system's is older.
    layered = bubblewrap(needs=frozenset({"overlay", *RUN_FEATURES}))

    def overlaid() -> None:
        with prepare(SandboxPolicy("bwrap", run_dir, task), bwrap=layered) as run:
            argv = run.argv([sys.executable, "-c", READ_ALL, str(destination)])
            at = argv.index("--chdir")
            overlay = ["--overlay-src", str(tree), "--tmp-overlay", str(destination)]
            try:
                _run([*argv[:at], *overlay, *argv[at:]], run.env, pass_fds=run.pass_fds)
            finally:
                destination.rmdir()  # the mount point bubblewrap made in the run directory

    samples: dict[str, list[float]] = {f"copy-{label}": [], f"overlay-{label}": []}
    copied()
    overlaid()
    for _ in range(runs):
        samples[f"copy-{label}"].append(_timed(copied))
        samples[f"overlay-{label}"].append(_timed(overlaid))
    return samples


def _cpu() -> float:
    """CPU seconds of this process and of the children it reaped."""
    own, reaped = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def _rubric_samples(bench: Path, runs: int) -> dict[str, list[float]]:
    """Seconds of each case run (bare, ``run_rubric`` sandboxed and under none), and their CPU.

    CPU (``cpu-*``): this process's and its reaped children's, plus, for a
    sandboxed run, the CPU time its cgroup counted (bubblewrap does not wait
    for its sandbox, so the sandbox's processes are never this process's
    reaped children); no ``cpu-sandboxed`` where no cgroup measures it.
    """
    slug = "cases-00000"
    registry = TaskClassRegistry()
    rubric = load_task_class(slug, bench / "bench", registry=registry).rubric
    assert rubric is not None
    cases = load_cases(slug, bench / "bench", registry=registry)
    sandboxed, bare = rubrics.choose_sandbox("auto"), rubrics.choose_sandbox("none")

    def plain(case: Any) -> float:
        command = [sys.executable, str(rubric), str(case.directory), str(case.expected)]
        subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL, check=True)
        return 0.0

    def runner(box: rubrics.Sandbox) -> Callable[[Any], float | None]:
        def run(case: Any) -> float | None:
            result = rubrics.run_rubric(rubric, case, case.expected, sandbox=box)
            assert result.status == "passed", result
            return result.cpu_s if box.contained else 0.0

        return run

    way = sandboxed.runs()

    def warm(case: Any) -> float | None:
        spec = RunSpec.of(rubric, case, case.expected, sandbox=sandboxed.policy)
        result = rubrics.execute(spec, sandboxed, runs=way)
        assert result.status == "passed", result
        return result.cpu_s

    fork_server = _ForkServer(rubric)

    def forked(case: Any) -> float | None:
        fork_server.run(case.directory, case.expected)
        return None

    measured: dict[str, Callable[[Any], float | None]] = {
        "bare": plain,
        "sandboxed": runner(sandboxed),
        "warm": warm,
        "fork": forked,
        "none": runner(bare),
    }
    try:
        for action in measured.values():  # warm the page cache once, and start the worker
            action(cases[0])
        if way.unavailable is not None:
            del measured["warm"]
        samples: dict[str, list[float]] = {}
        for _ in range(runs):
            for case in cases:
                for name, action in measured.items():
                    started, cpu = time.perf_counter(), _cpu()
                    inside = action(case)
                    samples.setdefault(name, []).append(time.perf_counter() - started)
                    if inside is not None:
                        samples.setdefault(f"cpu-{name}", []).append(_cpu() - cpu + inside)
    finally:
        fork_server.close()
        way.close()
    return samples


# A warm interpreter that forks a child per request, which runs the rubric as
# `python rubric.py CASE CANDIDATE` would (argv, sys.path[0], __main__), stdout to a pipe
# read by the parent: the floor of a run forked from a warm process, unsandboxed.
_FORK_SERVER = """\
import os, runpy, sys
rubric = sys.argv[1]
for line in sys.stdin:
    case, candidate = line.rstrip("\\n").split("\\0")
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        os.dup2(writer, 1)
        sys.argv = [rubric, case, candidate]
        sys.path[0] = os.path.dirname(rubric)
        try:
            runpy.run_path(rubric, run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        sys.stdout.flush()
        os._exit(code)
    os.close(writer)
    while os.read(reader, 65536):
        pass
    os.close(reader)
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(f"{os.waitstatus_to_exitcode(status)}\\n")
    sys.stdout.flush()
"""


class _ForkServer:
    """The fork-per-run floor: a warm ``python`` that forks a child to run the rubric."""

    def __init__(self, rubric: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _FORK_SERVER, str(rubric)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, case: Path, candidate: Path) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(f"{case}\0{candidate}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "0"

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def rubric_rows(size: int, runs: int, env: dict[str, str] | None = None) -> list[Row]:
    """The sandbox's rows of ``benchmarks/run.py``: a sandboxed rubric run and ``grade --jobs``.

    ``size`` cases of one task class, ``runs`` passes; see the module's docstring.
    """
    env = {**os.environ} if env is None else env
    work = Path(tempfile.mkdtemp(prefix="codegenie-sandbox-rubrics-"))
    try:
        bench = build_case_bench(work / "bench", 1, size)
        samples = _rubric_samples(bench, runs)
        median = {name: statistics.median(values) * 1e3 for name, values in samples.items()}
        least = {name: min(values) * 1e3 for name, values in samples.items()}
        rows = [
            Row(
                "sandboxed rubric run (`run_rubric`, bubblewrap) against a bare subprocess "
                "(`python rubric.py CASE CANDIDATE`), per case",
                size,
                median["sandboxed"],
                median["bare"],
                "`python rubric.py CASE CANDIDATE`, a bare subprocess",
                "<= 1.25x",
                1.25 if size >= 200 else None,
                note=f"median of {size} x {runs} case runs, alternating; minima "
                f"{least['sandboxed']:.2f} ms and {least['bare']:.2f} ms",
            ),
            *_warm_rows(size, median, least),
            Row(
                "`run_rubric` under `--sandbox none` against the same bare subprocess, per case",
                size,
                median["none"],
                median["bare"],
                "`python rubric.py CASE CANDIDATE`, a bare subprocess",
                "(reported)",
                None,
                note=f"minimum {least['none']:.2f} ms",
            ),
        ]
        for name in ("sandboxed", "none"):
            if f"cpu-{name}" not in median:
                continue  # no cgroup measures a sandboxed run's CPU time here
            rows.append(
                Row(
                    f"CPU time of a rubric run, {name}, against a bare subprocess's, per case",
                    size,
                    median[f"cpu-{name}"],
                    median["cpu-bare"],
                    "CPU time of `python rubric.py CASE CANDIDATE` and of starting it",
                    "(reported)",
                    None,
                    note="the harness's and the run's CPU time: what a busy machine's "
                    "wall-clock ratio is made of",
                )
            )
        rows += _grade_rows(bench, size, runs, env)
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _warm_rows(size: int, median: dict[str, float], least: dict[str, float]) -> list[Row]:
    """A warm worker's run against the bare subprocess, and against a fork of a warm process."""
    if "warm" not in median:
        return []  # no warm worker can start here: runs take the plain way
    extra = median["warm"] - median["fork"]
    return [
        Row(
            "sandboxed rubric run by a warm worker (`grade`'s way) against a bare subprocess "
            "(`python rubric.py CASE CANDIDATE`), per case",
            size,
            median["warm"],
            median["bare"],
            "`python rubric.py CASE CANDIDATE`, a bare subprocess",
            "<= 1.25x",
            1.25 if size >= 200 else None,
            note=f"minima {least['warm']:.2f} ms and {least['bare']:.2f} ms; copies, cgroups, "
            "the verdict and the removal included",
        ),
        Row(
            "the same against a fork of a warm interpreter that runs the rubric, per case",
            size,
            median["warm"],
            median["fork"],
            "fork of a warm `python`, the rubric run in the child (`runpy`), unsandboxed",
            "<= +5 ms",
            None,
            note=f"{extra:+.2f} ms a run ({'met' if extra <= 5 else 'not met'}); minima "
            f"{least['warm']:.2f} ms and {least['fork']:.2f} ms",
        ),
    ]


# What --jobs 2 could gain at best, measured in the same run as grade (issue 27, point 5): the
# cases' rubric run by P warm interpreters at once, each forking a process per case that runs
# it with runpy ("fork"), or that first takes new mount, PID (with its own /proc), IPC,
# network and cgroup namespaces — and, unprivileged, a user namespace — and runs it as the
# PID 1 of those forks a child ("namespaces", three forks a case as a warm worker's run).
# Prints the seconds the N cases took.
SCALING_FLOOR = """\
import ctypes, os, runpy, sys, time
package, candidates, procs, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
for name in ("collections", "json", "pathlib", "re", "tomllib", "typing"):
    __import__(name)
libc = ctypes.CDLL(None, use_errno=True)
flags = 0x00020000 | 0x20000000  # mount and PID: what a run needs at the least
if mode == "namespaces":
    flags |= 0x08000000 | 0x40000000 | 0x02000000  # IPC, network and cgroup too, as a run has
if os.geteuid() != 0:
    flags |= 0x10000000  # a user namespace, which lets an unprivileged user make the others
rubric = os.path.join(package, "rubric.py")
cases = sorted(os.listdir(os.path.join(package, "cases")))

def must(result):
    if result != 0:
        os._exit(3)

def run_rubric(case, out):
    os.dup2(out, 1)
    sys.argv = [rubric, os.path.join(package, "cases", case), os.path.join(candidates, case)]
    try:
        runpy.run_path(rubric, run_name="__main__")
    except SystemExit:
        pass
    sys.stdout.flush()
    os._exit(0)

def one(case):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        if mode != "fork":
            must(libc.unshare(flags))
            must(libc.mount(None, b"/", None, 0x4000 | 0x40000, None))  # MS_REC | MS_PRIVATE
            init = os.fork()
            if init == 0:
                must(libc.mount(b"proc", b"/proc", b"proc", 0, None))
                child = os.fork()
                if child == 0:
                    run_rubric(case, write)
                os.waitpid(child, 0)
                os._exit(0)
            _, status = os.waitpid(init, 0)
            os._exit(os.waitstatus_to_exitcode(status))
        run_rubric(case, write)
    os.close(write)
    while os.read(read, 65536):
        pass
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if status:
        raise SystemExit(f"a {mode} run failed: status {status}")

started = time.perf_counter()
workers = []
for index in range(procs):
    pid = os.fork()
    if pid == 0:
        for case in cases[index::procs]:
            one(case)
        os._exit(0)
    workers.append(pid)
failed = [pid for pid in workers if os.waitpid(pid, 0)[1]]
if failed:
    raise SystemExit("a floor's worker failed")
print(time.perf_counter() - started)
"""


def _scaling_floor(package: Path, candidates: Path, procs: int, mode: str) -> float | None:
    """Seconds the floor ``mode`` takes over every case with ``procs`` processes; ``None``
    where it cannot run (no namespaces for this user)."""
    done = subprocess.run(
        [sys.executable, "-c", SCALING_FLOOR, str(package), str(candidates), str(procs), mode],
        capture_output=True,
        text=True,
        check=False,
    )
    return float(done.stdout) if done.returncode == 0 else None


def _grade_rows(bench: Path, size: int, runs: int, env: dict[str, str]) -> list[Row]:
    package = bench / "bench" / "cases_00000"
    case_dirs = sorted((package / "cases").iterdir())
    candidates = bench / "candidates"
    for case in case_dirs:
        shutil.copytree(case / "expected", candidates / case.name)
    # --no-cache: every run runs; a result served from the ledger is not a run.
    command = [SCRIPT, "grade", "cases-00000", str(candidates), "--format", "json", "--no-cache"]
    env = {**env, "XDG_CACHE_HOME": str(bench / "cache")}

    def graded(jobs: str) -> float:
        started = time.perf_counter()
        done = subprocess.run(
            [*command, "--jobs", jobs], cwd=bench, env=env, capture_output=True, check=False
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:  # every candidate is a copy of its expected/: all must pass
            results = json.loads(done.stdout or b"{}").get("results", [])
            failed = [r for r in results if r["status"] != "passed"]
            msg = f"grade --jobs {jobs} exited {done.returncode}: {failed[:5]} {done.stderr!r}"
            raise SystemExit(msg)
        return elapsed

    one, two, floors = [], [], []
    # (mode, processes) -> seconds, each run: what the machine gives two processes at once.
    scaled: dict[tuple[str, int], list[float]] = {}
    for _ in range(runs):
        for mode in ("fork", "mount-pid", "namespaces"):
            for procs in (1, 2):
                taken = _scaling_floor(package, candidates, procs, mode)
                if taken is not None:
                    scaled.setdefault((mode, procs), []).append(taken)
        started = time.perf_counter()
        for case in case_dirs:
            bare = [
                sys.executable,
                str(package / "rubric.py"),
                str(case),
                str(candidates / case.name),
            ]
            subprocess.run(bare, capture_output=True, stdin=subprocess.DEVNULL, check=False)
        floors.append(time.perf_counter() - started)
        one.append(graded("1"))
        two.append(graded("2"))
    return [
        Row(
            "sandboxed `grade --jobs 1`, per case (whole run over N)",
            size,
            statistics.median(one) / size * 1e3,
            statistics.median(floors) / size * 1e3,
            "`python rubric.py CASE CANDIDATE`, a bare subprocess, N in sequence",
            "(reported)",
            None,
        ),
        Row(
            "sandboxed `grade --jobs 2`, against `--jobs 1` (whole runs)",
            size,
            statistics.median(two) * 1e3,
            statistics.median(one) * 1e3,
            "sandboxed `grade --jobs 1`",
            ">= 1.8x faster",  # issue 27, point 5 (issue 11 asked 1.7x)
            1 / 1.8 if size >= 200 else None,
        ),
        *_floor_rows(scaled, size),
    ]


def _floor_rows(scaled: dict[tuple[str, int], list[float]], size: int) -> list[Row]:
    """What two processes at once give the floors on this machine: the ceiling for --jobs 2."""
    described = {
        "fork": "the rubric in a fork of a warm interpreter per case, unsandboxed",
        "mount-pid": "the same in fresh mount and PID namespaces (with /proc) only, "
        "three forks a case",
        "namespaces": "the same in fresh namespaces (mount, PID with /proc, IPC, network, "
        "cgroup), three forks a case",
    }
    rows = []
    for mode, what in described.items():
        name = f"floor for `--jobs 2` against `--jobs 1`: {what}, 2 processes against 1"
        one, two = scaled.get((mode, 1), []), scaled.get((mode, 2), [])
        if not one or not two:  # no namespaces for this user (no user namespaces, say)
            rows.append(
                Row(f"{name} (could not run here)", size, 0.0, None, "-", "(reported)", None)
            )
            continue
        rows.append(
            Row(
                name,
                size,
                statistics.median(two) * 1e3,
                statistics.median(one) * 1e3,
                "the same, 1 process",
                "(reported)",
                None,
            )
        )
    return rows


def main(argv: list[str]) -> int:
    """``[RUNS]``: the start-up figures as JSON; ``rubrics [CASES [RUNS]]``: run.py's rows."""
    if argv[:1] == ["rubrics"]:
        size = int(argv[1]) if len(argv) > 1 else 200
        runs = int(argv[2]) if len(argv) > 2 else 3
        started = load_average()
        rows = rubric_rows(size, runs)
        sys.stdout.write(render(rows, runs, (started, load_average())))
        return 0
    runs = int(argv[0]) if argv else 50
    print(json.dumps(measure(runs), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
