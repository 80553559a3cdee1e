"""Benchmarks of cases and rubrics (issue 11, point 6), each against a floor of the same run.

Called by ``benchmarks/run.py`` (:func:`measure_cases`); the in-process
measurements run in a fresh interpreter each, through this file's own command
line: ``python benchmarks/cases.py KIND BENCH_DIR [RUNS]`` prints one JSON
object (seconds, or KiB for ``memory``); ``python benchmarks/cases.py table
SIZE [RUNS [OUTPUT]]`` measures these figures alone and prints run.py's table.
KIND is one of:

- ``load-cases``: ``load_cases`` of the bench's one task class, against the
  floor — list the cases directory, then for each case read ``case.toml``,
  parse it with ``tomllib`` and validate its task-specific keys with the task
  class's own ``case_model``. Warm (one of each first), alternating, RUNS of
  each; every run's seconds.
- ``case-floor``: the floor of ``check``'s case validation on a whole bench:
  the same loop over every task class's cases directory, in one process.
- ``rubric``: ``run_rubric`` on each case's ``expected/``, one case after the
  other, against running the same rubric as a bare subprocess (``python
  rubric.py CASE CANDIDATE``, stdout captured); the two alternate case by case.
  RUNS passes over every case; each pass's seconds.
- ``memory``: ``codegenie-bench check -q --jobs 2`` run in this process (the
  console entry point), then the peak resident memory (``VmHWM``) of this
  process, read from ``/proc/self/status`` at the end, and of each worker
  process it started, sampled every 5 ms while they live (``VmHWM`` only
  grows, so the last sample is the peak up to 5 ms before the worker ended).
  ``ru_maxrss`` is not used: it survives ``exec`` and would count the parent
  a worker was forked from.

The benches are synthetic but realistic: each task class declares a
``case_model`` of four typed, pattern-checked fields and a model validator
(the shape of the shipped ``bench/vuln_remediation``), every ``case.toml``
has a description, tags and those four keys, and the rubric reads
``case.toml`` (``tomllib``), the input's and the candidate's
``requirements.txt`` and prints a verdict.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import PYTHON, SCRIPT, Row, load_average, render, timed
else:
    from _common import PYTHON, SCRIPT, Row, load_average, render, timed

REGISTRATION = '''\
import re
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from codegenie.eval import register_task_class


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"[0-9]+", version))


class Remediation(BaseModel):
    """A pinned dependency with an advisory, and the first release that fixes it."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    package: Annotated[str, Field(pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")]
    vulnerable_version: Annotated[
        str, Field(alias="vulnerable-version", pattern=r"^[0-9]+(\\.[0-9]+)*$")
    ]
    fixed_version: Annotated[str, Field(alias="fixed-version", pattern=r"^[0-9]+(\\.[0-9]+)*$")]
    advisory: Annotated[str, Field(pattern=r"^CVE-[0-9]{4}-[0-9]{4,}$")]

    @model_validator(mode="after")
    def _fixed_after_vulnerable(self) -> Self:
        if _release(self.fixed_version) <= _release(self.vulnerable_version):
            raise ValueError("fixed-version must come after vulnerable-version")
        return self


@register_task_class(SLUG, description="Synthetic: upgrade a pin.", case_model=Remediation)
class TaskClassImpl:
    pass
'''

RUBRIC = """\
import json
import re
import sys
import tomllib
from pathlib import Path

PIN = re.compile(r"^\\s*([A-Za-z0-9][A-Za-z0-9._-]*)\\s*==\\s*([0-9][0-9.]*)\\s*$")


def pins(lines):
    return {m.group(1).lower(): m.group(2) for m in map(PIN.match, lines) if m}


def release(text):
    return tuple(int(part) for part in text.split("."))


case_dir, candidate_dir = Path(sys.argv[1]), Path(sys.argv[2])
case = tomllib.loads((case_dir / "case.toml").read_text(encoding="utf-8"))
package = case["package"].lower()
original = (case_dir / "input" / "requirements.txt").read_text(encoding="utf-8").splitlines()
file = candidate_dir / "requirements.txt"
candidate = file.read_text(encoding="utf-8").splitlines() if file.is_file() else []
pinned = pins(candidate).get(package)
if pinned is None or release(pinned) < release(case["fixed-version"]):
    verdict = {"passed": False, "reason": f"{package} is still vulnerable to {case['advisory']}"}
elif [x for x in original if package not in pins([x])] != [
    x for x in candidate if package not in pins([x])
]:
    verdict = {"passed": False, "reason": "other lines were changed"}
else:
    verdict = {"passed": True, "score": 1.0, "reason": f"{package}=={pinned}"}
print(json.dumps(verdict))
sys.exit(0 if verdict["passed"] else 1)
"""


def _slug(index: int) -> str:
    return f"cases-{index:05d}"


def write_task_class(root: Path, slug: str, cases: int) -> Path:
    """Write one task class (registration, rubric and ``cases`` of its cases) under ``root``."""
    package = root / slug.replace("-", "_")
    package.mkdir(parents=True)
    (package / "registration.py").write_text(REGISTRATION.replace("SLUG", repr(slug)))
    (package / "rubric.py").write_text(RUBRIC)
    for i in range(cases):
        case = package / "cases" / f"case-{i:05d}"
        (case / "input").mkdir(parents=True)
        (case / "expected").mkdir()
        name = f"pkg{i}"
        (case / "case.toml").write_text(
            f'description = "Synthetic case {i}: {name} 1.{i} has an advisory."\n'
            'tags = ["pypi", "synthetic"]\n'
            f'package = "{name}"\n'
            f'vulnerable-version = "1.{i}"\n'
            f'fixed-version = "2.{i}.1"\n'
            f'advisory = "CVE-2024-{10000 + i}"\n'
        )
        (case / "input" / "requirements.txt").write_text(f"{name}==1.{i}\nother==1.0\n")
        (case / "expected" / "requirements.txt").write_text(f"{name}==2.{i}.1\nother==1.0\n")
    return package


def build_case_bench(base: Path, classes: int, cases: int) -> Path:
    """Write ``base/bench.toml`` and ``classes`` task classes of ``cases`` cases; return base."""
    root = base / "bench"
    root.mkdir(parents=True)
    lines = ["schema-version = 1", ""]
    for index in range(classes):
        slug = _slug(index)
        write_task_class(root, slug, cases)
        lines += [
            f"[task-classes.{slug}]",
            f'module = "bench.{slug.replace("-", "_")}.registration"',
            'root = "bench"',
            "",
        ]
    (base / "bench.toml").write_text("\n".join(lines))
    return base


# -- in-process measurements (a fresh interpreter each) -------------------------------


def _floor_loop(directory: str, model: Any) -> int:
    """List ``directory``; read, ``tomllib``-parse, validate each ``case.toml``; return how many."""
    names = sorted(os.listdir(directory))
    for name in names:
        with open(os.path.join(directory, name, "case.toml"), "rb") as file:
            document = tomllib.loads(file.read().decode())
        for key in ("description", "tags", "timeout", "id"):
            document.pop(key, None)
        model.model_validate(document)
    return len(names)


def _load_cases(bench: Path, runs: int) -> dict[str, list[float]]:
    from codegenie.eval import TaskClassRegistry
    from codegenie.eval.loader import load_cases, load_task_class

    registry = TaskClassRegistry()
    root = bench / "bench"
    task_class = load_task_class(_slug(0), root, registry=registry)
    directory, model = str(task_class.cases), task_class.case_model
    expected = len(load_cases(_slug(0), root, registry=registry))  # warm: one of each
    assert _floor_loop(directory, model) == expected
    ours, floors = [], []
    for _ in range(runs):
        started = time.perf_counter()
        _floor_loop(directory, model)
        floors.append(time.perf_counter() - started)
        started = time.perf_counter()
        load_cases(_slug(0), root, registry=registry)
        ours.append(time.perf_counter() - started)
    return {"value": ours, "floor": floors, "cases": [float(expected)]}


def _case_floor(bench: Path) -> dict[str, list[float]]:
    """The 1,000 x 10 floor: every task class's cases, one model, one process."""
    import importlib

    sys.path.insert(0, str(bench))
    model = importlib.import_module(f"bench.{_slug(0).replace('-', '_')}.registration").Remediation
    root = bench / "bench"
    directories = sorted(str(entry / "cases") for entry in root.iterdir() if entry.is_dir())
    started = time.perf_counter()
    count = sum(_floor_loop(directory, model) for directory in directories)
    return {"value": [time.perf_counter() - started], "cases": [float(count)]}


def _rubric(bench: Path, runs: int) -> dict[str, list[float]]:
    from codegenie.eval.loader import load_cases, load_task_class
    from codegenie.eval.rubrics import run_rubric

    root = bench / "bench"
    rubric = load_task_class(_slug(0), root).rubric
    assert rubric is not None
    cases = load_cases(_slug(0), root)

    def bare(case: Any) -> None:
        command = [sys.executable, str(rubric), str(case.directory), str(case.expected)]
        subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL, check=True)

    bare(cases[0])
    assert run_rubric(rubric, cases[0], cases[0].expected).status == "passed"
    ours, floors = [], []
    for _ in range(runs):
        mine = theirs = 0.0
        for case in cases:
            started = time.perf_counter()
            bare(case)
            theirs += time.perf_counter() - started
            started = time.perf_counter()
            result = run_rubric(rubric, case, case.expected)
            mine += time.perf_counter() - started
            assert result.status == "passed", result
        ours.append(mine)
        floors.append(theirs)
    return {"value": ours, "floor": floors, "cases": [float(len(cases))]}


def _status_kib(pid: int | str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as file:
            status = file.read()
    except OSError:
        return None
    return int(status.split("VmHWM:")[1].split()[0])


def _memory(bench: Path) -> dict[str, list[float]]:
    from codegenie.eval.__main__ import main

    peaks: dict[int, int] = {}
    done = threading.Event()

    def sample() -> None:
        me = os.getpid()
        while not done.is_set():
            try:
                with open(f"/proc/{me}/task/{me}/children") as file:
                    pids = [int(pid) for pid in file.read().split()]
            except OSError:
                pids = []
            for pid in pids:
                kib = _status_kib(pid)
                if kib is not None:
                    peaks[pid] = max(peaks.get(pid, 0), kib)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    os.chdir(bench)
    code = main(["check", "-q", "--jobs", "2"])
    done.set()
    sampler.join()
    me = _status_kib("self")
    assert me is not None
    return {
        "check": [float(me)],
        "worker": [float(max(peaks.values(), default=0))],
        "code": [float(code)],
    }


def main(argv: list[str]) -> int:
    if argv[1] == "table":  # only these figures, as run.py prints them
        started = load_average()
        runs = int(argv[3]) if len(argv) > 3 else 5
        rows = run_cases(int(argv[2]), runs)
        table = render(rows, runs, (started, load_average()))
        sys.stdout.write(table)
        if len(argv) > 4:
            Path(argv[4]).write_text(table)
        return 0
    kind, bench = argv[1], Path(argv[2])
    runs = int(argv[3]) if len(argv) > 3 else 1
    if kind == "load-cases":
        result = _load_cases(bench, runs)
    elif kind == "case-floor":
        result = _case_floor(bench)
    elif kind == "rubric":
        result = _rubric(bench, runs)
    elif kind == "memory":
        # The check's own output goes to stderr: stdout carries the JSON only.
        saved = os.dup(1)
        os.dup2(2, 1)
        try:
            result = _memory(bench)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    else:
        sys.stderr.write(f"unknown kind {kind!r}\n")
        return 2
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


# -- the rows (called by run.py) ------------------------------------------------------------


def _inprocess(
    kind: str, bench: Path, env: dict[str, str], runs: int = 1
) -> dict[str, list[float]]:
    out = subprocess.run(
        [PYTHON, str(Path(__file__).resolve()), kind, str(bench), str(runs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _row(
    what: str, n: int, value: float, floor: float | None, floor_name: str, **extra: Any
) -> Row:
    return Row(
        what=what,
        n=n,
        value=value,
        floor=floor,
        floor_name=floor_name,
        target=extra.pop("target", "(reported)"),
        limit=extra.pop("limit", None),
        **extra,
    )


def grade_available(env: dict[str, str]) -> bool:
    """Whether this tree's ``codegenie-bench`` has a ``grade`` command."""
    shown = subprocess.run([SCRIPT, "--help"], env=env, capture_output=True, text=True, check=False)
    return any(line.split()[:1] == ["grade"] for line in shown.stdout.splitlines())


def measure_load_cases(work: Path, size: int, runs: int, env: dict[str, str]) -> list[Row]:
    bench = build_case_bench(work / f"load-cases-{size}", 1, size)
    result = _inprocess("load-cases", bench, env, max(runs, 5) * 2)
    shutil.rmtree(bench, ignore_errors=True)
    value, floor = statistics.median(result["value"]), statistics.median(result["floor"])
    return [
        _row(
            "`load_cases`, one task class (in-process, warm)",
            size,
            value * 1e3,
            floor * 1e3,
            "list the directory; read, `tomllib`-parse, validate with the case model",
            target="<= 1.5x",
            limit=1.5 if size >= 1000 else None,
            note=f"{value / size * 1e6:.1f} us a case; median of {len(result['value'])}",
        )
    ]


def measure_check_cases(work: Path, classes: int, runs: int, env: dict[str, str]) -> list[Row]:
    """`check --jobs 2` with 10 cases per task class, minus the same bench without cases."""
    cases = 10
    with_cases = build_case_bench(work / f"check-cases-{classes}", classes, cases)
    without = build_case_bench(work / f"check-nocases-{classes}", classes, 0)
    command = [SCRIPT, "check", "-q", "--jobs", "2"]
    full, bare, differences, floors = [], [], [], []
    for _ in range(runs):
        floors.append(statistics.median(_inprocess("case-floor", with_cases, env)["value"]))
        b = timed(command, without, env, check=False)
        a = timed(command, with_cases, env)
        full.append(a)
        bare.append(b)
        differences.append(a - b)
    memory = _inprocess("memory", with_cases, env)
    shutil.rmtree(without, ignore_errors=True)
    shutil.rmtree(with_cases, ignore_errors=True)
    n = classes * cases
    floor = statistics.median(floors)
    added = statistics.median(differences)
    floor_name = "read, `tomllib`-parse, validate every case file, one process"
    check_mib = memory["check"][0] / 1024
    worker_mib = memory["worker"][0] / 1024
    return [
        _row(
            f"`check --jobs 2`, case validation: {classes:,} task classes x {cases} cases "
            "minus the same bench without cases",
            n,
            added * 1e3,
            floor * 1e3,
            floor_name,
            target="<= 2.0x",
            limit=2.0 if classes >= 1000 else None,
            note=f"medians: with cases {statistics.median(full) * 1e3:,.0f} ms, "
            f"without {statistics.median(bare) * 1e3:,.0f} ms; median of the {runs} differences",
        ),
        _row(
            f"`check --jobs 2`, whole run, {classes:,} task classes x {cases} cases",
            n,
            statistics.median(full) * 1e3,
            floor * 1e3,
            floor_name,
        ),
        _row(
            "peak memory: `check --jobs 2`, the checking process (VmHWM)",
            n,
            check_mib,
            150.0,
            "150 MiB",
            target="< 150 MiB",
            limit=1.0 if classes >= 1000 else None,
            unit="MiB",
        ),
        _row(
            "peak memory: `check --jobs 2`, its largest worker (VmHWM, sampled)",
            n,
            worker_mib,
            150.0,
            "150 MiB",
            target="< 150 MiB",
            limit=1.0 if classes >= 1000 else None,
            unit="MiB",
        ),
    ]


def _bare_runs(cases: list[Path], rubric: Path, sides: tuple[str, ...]) -> float:
    started = time.perf_counter()
    for case in cases:
        for side in sides:
            command = [PYTHON, str(rubric), str(case), str(case / side)]
            subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def measure_rubrics(work: Path, size: int, runs: int, env: dict[str, str]) -> list[Row]:
    bench = build_case_bench(work / f"rubrics-{size}", 1, size)
    rows = []
    result = _inprocess("rubric", bench, env, runs)
    value = statistics.median(result["value"]) / size
    floor = statistics.median(result["floor"]) / size
    rows.append(
        _row(
            "`run_rubric` (what `grade` and `check --rubrics` run), per case, sequential",
            size,
            value * 1e3,
            floor * 1e3,
            "`python rubric.py CASE CANDIDATE`, a bare subprocess",
            target="<= 1.2x",
            limit=1.2 if size >= 200 else None,
            note="alternating case by case",
        )
    )
    package = bench / "bench" / _slug(0).replace("-", "_")
    rubric = package / "rubric.py"
    case_dirs = sorted((package / "cases").iterdir())
    check = [SCRIPT, "check", "-q"]
    one, two, plain, floors = [], [], [], []
    for _ in range(runs):
        floors.append(_bare_runs(case_dirs, rubric, ("expected", "input")))
        plain.append(timed([*check, "--jobs", "1"], bench, env))
        one.append(timed([*check, "--rubrics", "--jobs", "1"], bench, env))
        two.append(timed([*check, "--rubrics", "--jobs", "2"], bench, env))
    floor = statistics.median(floors) / (2 * size)
    added = statistics.median(a - b for a, b in zip(one, plain, strict=True)) / (2 * size)
    rows.append(
        _row(
            "`check --rubrics --jobs 1`, per rubric run (2 a case; run minus `check` without "
            "`--rubrics`, over 2N)",
            size,
            added * 1e3,
            floor * 1e3,
            "`python rubric.py CASE CANDIDATE`, a bare subprocess, 2N in sequence",
            target="<= 1.2x",
            limit=1.2 if size >= 200 else None,
            note=f"whole runs: {statistics.median(one) * 1e3:,.0f} ms with, "
            f"{statistics.median(plain) * 1e3:,.0f} ms without",
        )
    )
    rows.append(
        _row(
            "`check --rubrics --jobs 2`, against `--jobs 1` (whole runs)",
            size,
            statistics.median(two) * 1e3,
            statistics.median(one) * 1e3,
            "`check --rubrics --jobs 1`",
            target=">= 1.7x faster",
            limit=1 / 1.7 if size >= 200 else None,
        )
    )
    if grade_available(env):
        rows += _measure_grade(bench, case_dirs, rubric, size, runs, env)
    else:
        rows.append(
            _row(
                "`grade`: skipped, this `codegenie-bench` has no `grade` command",
                size,
                0.0,
                None,
                "",
            )
        )
    shutil.rmtree(bench, ignore_errors=True)
    return rows


def _measure_grade(
    bench: Path, case_dirs: list[Path], rubric: Path, size: int, runs: int, env: dict[str, str]
) -> list[Row]:
    candidates = bench / "candidates"
    for case in case_dirs:
        shutil.copytree(case / "expected", candidates / case.name)
    command = [SCRIPT, "grade", _slug(0), str(candidates)]
    one, two, floors = [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        for case in case_dirs:
            bare = [PYTHON, str(rubric), str(case), str(candidates / case.name)]
            subprocess.run(bare, capture_output=True, stdin=subprocess.DEVNULL, check=False)
        floors.append(time.perf_counter() - started)
        one.append(timed([*command, "--jobs", "1"], bench, env))
        two.append(timed([*command, "--jobs", "2"], bench, env))
    floor = statistics.median(floors)
    return [
        _row(
            "`grade --jobs 1`, per case (whole run over N)",
            size,
            statistics.median(one) / size * 1e3,
            floor / size * 1e3,
            "`python rubric.py CASE CANDIDATE`, a bare subprocess, N in sequence",
            target="<= 1.2x",
            limit=1.2 if size >= 200 else None,
        ),
        _row(
            "`grade --jobs 2`, against `--jobs 1` (whole runs)",
            size,
            statistics.median(two) * 1e3,
            statistics.median(one) * 1e3,
            "`grade --jobs 1`",
            target=">= 1.7x faster",
            limit=1 / 1.7 if size >= 200 else None,
        ),
    ]


def measure_ledger(work: Path, classes: int, runs: int, env: dict[str, str]) -> list[Row]:
    """`check --strict --rubrics` on an unchanged bench (all reused) against `check --strict`."""
    cases = 10
    bench = build_case_bench(work / f"ledger-{classes}", classes, cases)
    # The store filled once: every case's expected/ and input/ run in the sandbox.
    subprocess.run(
        [SCRIPT, "check", "-q", "--rubrics", "--jobs", "2"],
        cwd=bench,
        env=env,
        check=False,
        capture_output=True,
    )
    with_rubrics = [SCRIPT, "check", "-q", "--strict", "--rubrics", "--jobs", "2"]
    without = [SCRIPT, "check", "-q", "--strict", "--jobs", "2"]
    subject, floor = [], []
    for _ in range(runs):
        floor.append(timed(without, bench, env, check=False))
        subject.append(timed(with_rubrics, bench, env, check=False))
    shutil.rmtree(bench, ignore_errors=True)
    return [
        _row(
            f"`check --strict --rubrics`, unchanged bench (every result reused), "
            f"{classes:,} task classes x {cases} cases",
            classes * cases,
            statistics.median(subject) * 1e3,
            statistics.median(floor) * 1e3,
            "`check --strict` without `--rubrics`, same bench",
            target="<= 1.5x",
            limit=1.5 if classes >= 1000 else None,
        )
    ]


def measure_cases(work: Path, size: int, runs: int, env: dict[str, str]) -> list[Row]:
    """Every row of issue 11's point 6.

    ``size`` is the number of cases of ``load_cases``'s task class and of task
    classes (10 cases each) in ``check``'s bench; the rubric figures use
    ``min(size, 200)`` cases.
    """
    rows = measure_load_cases(work, size, runs, env)
    rows += measure_check_cases(work, size, runs, env)
    rows += measure_rubrics(work, min(size, 200), runs, env)
    rows += measure_ledger(work, size, runs, env)
    return rows


def run_cases(size: int, runs: int) -> list[Row]:
    """Build the benches in a temporary directory, measure, clean up; return the rows."""
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-cases-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    try:
        return measure_cases(work, size, runs, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
