"""Benchmarks of the task classes' own environments (issue 26): building one, grading in one.

Called by ``benchmarks/run.py`` (:func:`environment_rows`); alone,
``python benchmarks/environments.py [CASES [RUNS]]`` (default 100, 5) prints
run.py's table. On a bench of three task classes written in a temporary
directory:

- ``codegenie-bench env build`` of a task class whose requirements are
  ``six==1.16.0`` and ``iniconfig==2.0.0``, cold: a fresh
  ``CODEGENIE_ENV_DIR`` *and* a fresh ``UV_CACHE_DIR`` each run, so that uv
  resolves and downloads (neither pin is in any local wheel directory this
  machine's pip configuration names); its floor is uv's own cost: the two uv
  commands the build runs (``uv venv`` with the same interpreter, ``uv pip
  install --compile-bytecode -r``), run directly into a fresh directory with
  the same fresh caches and the same uv configuration;
- the same build warm: a fresh ``CODEGENIE_ENV_DIR``, uv's cache kept (filled
  once beforehand); floor: the same two uv commands with that warm cache;
- ``grade SLUG CANDIDATES --no-cache --jobs 2`` (sandboxed, ``--sandbox
  auto``) of a task class of CASES cases with a trivial rubric (it reads the
  candidate's file and prints a verdict) that declares ``environment``
  (``six==1.16.0``, built beforehand, so the build is not timed), against
  the same grading of a twin task class (same rubric, same cases) that
  declares nothing and runs in the harness's own interpreter. Target: at
  most 1.1 times as long.

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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from codegenie.eval._env.pip_config import uv_environment
from codegenie.eval._env.python import find_python
from codegenie.eval._env.spec import uv_binary

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import SCRIPT, Row, load_average, render
else:
    from _common import SCRIPT, Row, load_average, render

BUILD_SLUG = "env-build"
IN_ENV_SLUG = "in-environment"
OWN_SLUG = "in-harness"
#: What the built task class requires: two small, real, pinned packages.
BUILD_REQUIREMENTS = "six==1.16.0\niniconfig==2.0.0\n"
#: What the graded task class requires: one small package.
GRADE_REQUIREMENTS = "six==1.16.0\n"

REGISTRATION = """\
from codegenie.eval import register_task_class


@register_task_class({slug!r})
class TaskClass:
    \"\"\"The answer, read from the candidate's file.\"\"\"
"""
# Trivial: reads one file of the candidate, prints a verdict. Imports nothing the harness lacks.
RUBRIC = """\
import json
import sys
from pathlib import Path

answer = (Path(sys.argv[2]) / "answer.txt").read_text().strip()
passed = answer == "42"
print(json.dumps({"passed": passed, "reason": "the answer" if passed else "not the answer"}))
sys.exit(0 if passed else 1)
"""


def build(
    base: Path, cases: int, build_requirements: str, grade_requirements: str
) -> tuple[Path, Path]:
    """Write the bench (three task classes) and the candidates under ``base``; return both."""
    envs = base / "envs"
    envs.mkdir(parents=True)
    (envs / "build.txt").write_text(build_requirements, encoding="utf-8")
    (envs / "grade.txt").write_text(grade_requirements, encoding="utf-8")
    manifest = ["schema-version = 1", ""]
    for slug, requirements, count in (
        (BUILD_SLUG, "envs/build.txt", 1),
        (IN_ENV_SLUG, "envs/grade.txt", cases),
        (OWN_SLUG, None, cases),
    ):
        ident = slug.replace("-", "_")
        package = base / "bench" / ident
        package.mkdir(parents=True)
        (package / "registration.py").write_text(REGISTRATION.format(slug=slug), encoding="utf-8")
        (package / "rubric.py").write_text(RUBRIC, encoding="utf-8")
        for number in range(count):
            case = package / "cases" / f"case-{number:04d}"
            (case / "input").mkdir(parents=True)
            (case / "expected").mkdir()
            (case / "case.toml").write_text('description = "the answer"\n', encoding="utf-8")
            (case / "expected" / "answer.txt").write_text("42\n", encoding="utf-8")
        manifest += [f"[task-classes.{slug}]", f'module = "bench.{ident}.registration"']
        manifest += ['root = "bench"']
        if requirements is not None:
            manifest.append(f'environment = "{requirements}"')
        manifest.append("")
    (base / "bench.toml").write_text("\n".join(manifest), encoding="utf-8")
    candidates = base / "candidates"
    for number in range(cases):
        directory = candidates / f"case-{number:04d}"
        directory.mkdir(parents=True)
        # Nine in ten right: both verdicts are printed and reported.
        (directory / "answer.txt").write_text("42\n" if number % 10 else "41\n", encoding="utf-8")
    return base, candidates


def _run(argv: list[str], cwd: Path, env: Mapping[str, str]) -> float:
    """Run ``argv``; return its wall-clock seconds. A grade's exit 1 (a case failed) is success."""
    started = time.perf_counter()
    done = subprocess.run(
        argv, cwd=cwd, env=dict(env), capture_output=True, check=False, stdin=subprocess.DEVNULL
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1) or (done.returncode == 1 and argv[1:2] != ["grade"]):
        output = (done.stdout + done.stderr).decode("utf-8", "replace")[-3000:]
        raise SystemExit(f"{argv[:3]} exited {done.returncode}: {output}")
    return elapsed


def _uv_floor(
    target: Path, requirements: Path, python: str, env: Mapping[str, str], cwd: Path
) -> float:
    """The two uv commands the build runs, run directly: ``uv venv``, ``uv pip install -r``."""
    uv = uv_binary()
    environ = uv_environment(env)  # the uv configuration the build itself runs uv with
    venv = [uv, "venv", "--quiet", "--relocatable", "--no-project", "--python", python]
    install = [uv, "pip", "install", "--python", str(target / "bin" / "python")]
    started = time.perf_counter()
    _run([*venv, str(target)], cwd, environ)
    _run([*install, "--compile-bytecode", "-r", str(requirements)], cwd, environ)
    return time.perf_counter() - started


def _alternate(
    runs: int, subject: Callable[[int], float], floor: Callable[[int], float]
) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    floors: list[float] = []
    for run in range(runs):
        floors.append(floor(run))
        ours.append(subject(run))
    return ours, floors


def environment_rows(
    cases: int,
    runs: int,
    env: Mapping[str, str] | None = None,
    *,
    build_requirements: str = BUILD_REQUIREMENTS,
    grade_requirements: str = GRADE_REQUIREMENTS,
) -> list[Row]:
    """Measure the figures of the module's docstring; return run.py's rows.

    ``env`` (default ``os.environ``) is what every command runs with, less
    what each figure sets (``CODEGENIE_ENV_DIR``, ``UV_CACHE_DIR``,
    ``XDG_CACHE_HOME``): a test points it at a local wheel directory
    (``UV_FIND_LINKS``, ``UV_NO_INDEX``) and passes its own requirements.
    """
    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-environments-"))
    try:
        base, candidates = build(work / "bench", cases, build_requirements, grade_requirements)
        common = {**(env or os.environ), "XDG_CACHE_HOME": str(work / "cache")}
        python = find_python(None)  # the harness's own: what an entry without `python` builds with
        if python is None:  # pragma: no cover - the harness's interpreter is always found
            raise SystemExit("the harness's interpreter was not found")
        requirements = base / "envs" / "build.txt"
        fresh = iter(range(10**6))

        def scratch(name: str) -> Path:
            return work / f"{name}-{next(fresh)}"

        def clean(*paths: Path) -> None:
            for path in paths:
                shutil.rmtree(path, ignore_errors=True)

        def env_build(uv_cache: Path) -> float:
            store = scratch("store")
            settings = {**common, "CODEGENIE_ENV_DIR": str(store), "UV_CACHE_DIR": str(uv_cache)}
            elapsed = _run([SCRIPT, "env", "build", BUILD_SLUG], base, settings)
            clean(store)
            return elapsed

        def uv_alone(uv_cache: Path) -> float:
            target = scratch("venv")
            settings = {**common, "UV_CACHE_DIR": str(uv_cache)}
            elapsed = _uv_floor(target, requirements, python.executable, settings, base)
            clean(target)
            return elapsed

        def cold(measure: Callable[[Path], float]) -> Callable[[int], float]:
            def once(_: int) -> float:
                uv_cache = scratch("uv-cache")
                elapsed = measure(uv_cache)
                clean(uv_cache)
                return elapsed

            return once

        cold_ours, cold_floors = _alternate(runs, cold(env_build), cold(uv_alone))

        warm_cache = work / "uv-cache-warm"
        uv_alone(warm_cache)  # fills it: every run after this one is warm
        warm_ours, warm_floors = _alternate(
            runs, lambda _: env_build(warm_cache), lambda _: uv_alone(warm_cache)
        )

        graded = {
            **common,
            "CODEGENIE_ENV_DIR": str(work / "store-grade"),
            "UV_CACHE_DIR": str(warm_cache),
        }
        _run([SCRIPT, "env", "build", IN_ENV_SLUG], base, graded)  # built once, not timed

        def grade(slug: str) -> Callable[[int], float]:
            argv = [SCRIPT, "grade", slug, str(candidates), "--no-cache", "--jobs", "2"]
            return lambda _: _run([*argv, "--format", "json"], base, graded)

        in_env, own = _alternate(runs, grade(IN_ENV_SLUG), grade(OWN_SLUG))
        cold_note = f"medians of {runs}; ranges {min(cold_ours):.2f}-{max(cold_ours):.2f} s"
        cold_note += f" and {min(cold_floors):.2f}-{max(cold_floors):.2f} s"
        value, floor = statistics.median(in_env), statistics.median(own)
        return [
            Row(
                "`env build`, cold: fresh store and fresh uv cache (uv downloads)",
                2,
                statistics.median(cold_ours) * 1e3,
                statistics.median(cold_floors) * 1e3,
                "`uv venv` + `uv pip install -r`, same fresh caches",
                "(reported)",
                None,
                note=f"2 pinned packages; {cold_note}",
            ),
            Row(
                "`env build`, warm: fresh store, uv's cache kept",
                2,
                statistics.median(warm_ours) * 1e3,
                statistics.median(warm_floors) * 1e3,
                "`uv venv` + `uv pip install -r`, same warm cache",
                "(reported)",
                None,
                note="2 pinned packages",
            ),
            Row(
                "sandboxed `grade --no-cache --jobs 2` in a declared environment, "
                "against in the harness's own",
                cases,
                value * 1e3,
                floor * 1e3,
                "the same `grade` of a twin task class that declares none",
                "<= 1.1x",
                1.1,
                note=f"per rubric run {value / cases * 1e3:.1f} ms against "
                f"{floor / cases * 1e3:.1f} ms",
            ),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    cases = int(argv[0]) if argv else 100
    runs = int(argv[1]) if len(argv) > 1 else 5
    started = load_average()
    rows = environment_rows(cases, runs)
    sys.stdout.write(render(rows, runs, (started, load_average())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
