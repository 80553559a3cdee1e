"""Whether a run's cost stays flat as a grading grows: 100 runs against many (issue 27, point 5).

``python benchmarks/scaling.py [LARGE [RUNS]]`` (default 3000 and 3) prints
run.py's table. A task class whose rubric reads the candidate's one file
and prints a verdict; ``grade SLUG CANDIDATES --samples --jobs 2 --no-cache``
(the default sandbox) of 10 cases with 10 samples each (100 runs) and of 10
cases with LARGE / 10 samples each: the cost per run of the large grading
against the small one's, alternating, medians. What grows with the number
of runs — submitting them, waiting for them, ordering the results, the
ledger, the progress line — shows as a ratio above 1. No test asserts a
time. Target: at most 1.1x.
"""

from __future__ import annotations

import os
import shutil
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
    from benchmarks._common import SCRIPT, Row, load_average, render
else:
    from _common import SCRIPT, Row, load_average, render

SLUG = "scaling"
CASES = 10
REGISTRATION = '''\
from codegenie.eval import register_task_class


@register_task_class("scaling")
class Scaling:
    """A trivial task class: the candidate's answer.txt is read."""
'''
RUBRIC = """\
import json
import sys
from pathlib import Path

answer = (Path(sys.argv[2]) / "answer.txt").read_text()
print(json.dumps({"passed": True, "reason": answer.strip()}))
"""


def build(base: Path, samples: int) -> Path:
    """Write the bench and a samples directory of ``samples`` per case under ``base``."""
    package = base / "bench" / "scaling"
    package.mkdir(parents=True)
    (base / "bench.toml").write_text(
        f'schema-version = 1\n\n[task-classes.{SLUG}]\nmodule = "bench.scaling.registration"\n'
        'root = "bench"\n',
        encoding="utf-8",
    )
    (package / "registration.py").write_text(REGISTRATION, encoding="utf-8")
    (package / "rubric.py").write_text(RUBRIC, encoding="utf-8")
    for number in range(CASES):
        case = package / "cases" / f"case-{number}"
        (case / "input").mkdir(parents=True)
        (case / "expected").mkdir()
        (case / "case.toml").write_text('description = "trivial"\n')
        (case / "expected" / "answer.txt").write_text("42\n")
    candidates = base / f"samples-{samples}"
    for number in range(CASES):
        for sample in range(samples):
            directory = candidates / f"case-{number}" / f"s{sample:05d}"
            directory.mkdir(parents=True)
            (directory / "answer.txt").write_text(f"{sample}\n")
    return candidates


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        msg = f"{argv[1:3]} exited {done.returncode}: {done.stderr.decode()[-2000:]}"
        raise SystemExit(msg)
    return elapsed


def scaling_rows(large: int, runs: int) -> list[Row]:
    """Measure the figure of the module's docstring; return run.py's row."""
    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-scaling-"))
    try:
        small_dir = build(work, 10)
        large_dir = build(work / "large", max(large // CASES, 1))
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
        small, big = [], []
        total = CASES * max(large // CASES, 1)
        for _ in range(runs):
            argv = [SCRIPT, "grade", SLUG, str(small_dir), "--samples", "--jobs", "2"]
            small.append(_timed([*argv, "--no-cache"], work, env) / (CASES * 10))
            argv = [SCRIPT, "grade", SLUG, str(large_dir), "--samples", "--jobs", "2"]
            big.append(_timed([*argv, "--no-cache"], work / "large", env) / total)
        return [
            Row(
                "sandboxed `grade --samples --jobs 2 --no-cache`, per run, of a large grading",
                total,
                statistics.median(big) * 1e3,
                statistics.median(small) * 1e3,
                "the same per run of 100 runs (10 cases x 10 samples)",
                "<= 1.1x",
                1.1,
            )
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    large = int(argv[0]) if argv else 3000
    runs = int(argv[1]) if len(argv) > 1 else 3
    started = load_average()
    rows = scaling_rows(large, runs)
    sys.stdout.write(render(rows, runs, (started, load_average())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
