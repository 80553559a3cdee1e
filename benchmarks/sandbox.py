"""What the rubric sandbox costs: start-up, set-up, and copying versus overlaying the trees.

``python benchmarks/sandbox.py [RUNS]`` (default 50) prints one JSON object:
the median and the minimum of every figure in milliseconds over RUNS runs
(the minimum is the cost on an idle machine; on a shared one, the median
carries the load, also printed), the variants of a measure alternating run
by run so that a drifting machine skews none of them:

- ``bare``: ``python -c pass``, as ``subprocess.run`` starts it;
- ``bwrap``: the same inside bubblewrap with the rubric policy's arguments
  (namespaces, mounts), run after run with one prepared policy;
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
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codegenie.eval import rubrics
from codegenie.eval._sandbox import Bubblewrap, SandboxPolicy, bubblewrap, bwrap_args, prepare

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


def _run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdin=subprocess.DEVNULL)


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

        def sandboxed() -> None:
            with prepare(SandboxPolicy("bwrap", fixed_run, task), bwrap=bwrap) as run:
                _run(run.argv(python), run.env, run.cwd)

        def rlimited() -> None:
            policy = SandboxPolicy("bwrap", fixed_run, task)
            with prepare(policy, bwrap=bwrap, cgroups=False) as run:
                _run(run.argv(python), run.env, run.cwd)

        def prepared() -> None:
            prepare(SandboxPolicy("bwrap", fixed_run, task), bwrap=bwrap).close()

        startup: dict[str, Callable[[], None]] = {
            "bare": lambda: _run(python),
            "bwrap": lambda: _run([*wrapped, *python], fixed.env, fixed.cwd),
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
            rubrics._copy_tree(str(tree), str(destination))  # the runner's own copy
            try:
                _run(run.argv([sys.executable, "-c", READ_ALL, str(destination)]), run.env)
            finally:
                rubrics._remove_tree(str(destination))

    def overlaid() -> None:
        with prepare(SandboxPolicy("bwrap", run_dir, task), bwrap=bwrap) as run:
            argv = run.argv([sys.executable, "-c", READ_ALL, str(destination)])
            at = argv.index("--chdir")
            overlay = ["--overlay-src", str(tree), "--tmp-overlay", str(destination)]
            try:
                _run([*argv[:at], *overlay, *argv[at:]], run.env)
            finally:
                destination.rmdir()  # the mount point bubblewrap made in the run directory

    samples: dict[str, list[float]] = {f"copy-{label}": [], f"overlay-{label}": []}
    copied()
    overlaid()
    for _ in range(runs):
        samples[f"copy-{label}"].append(_timed(copied))
        samples[f"overlay-{label}"].append(_timed(overlaid))
    return samples


def main(argv: list[str]) -> int:
    """Measure with ``argv[0]`` runs (default 50) and print the JSON object."""
    runs = int(argv[0]) if argv else 50
    print(json.dumps(measure(runs), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
