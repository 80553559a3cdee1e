"""Benchmarks of codegenie-eval against the floors it is meant to stay near.

Usage (from the repository root, with the package installed):

    python benchmarks/run.py [--sizes 10,1000,13000] [--runs 5] [--output FILE]

Builds synthetic benches of N task classes in a temporary directory and
measures each figure as the median of --runs runs, next to its floor measured
in the same run (subject and floor runs alternate, so drift hits both). These
machines are noisy: compare ratios, not absolute times, across runs. Writes a
Markdown table (stdout, or --output). No test asserts any of these times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
SCRIPT = shutil.which("codegenie-bench", path=str(Path(PYTHON).parent)) or "codegenie-bench"


@dataclass
class Row:
    what: str
    n: int
    value: float
    floor: float | None
    floor_name: str
    target: str
    limit: float | None  # ratio limit (value / floor <= limit), or None
    unit: str = "ms"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.value / self.floor if self.floor else None

    def verdict(self) -> str:
        if self.limit is None:
            return "-"
        ratio = self.ratio
        return "met" if ratio is not None and ratio <= self.limit else "not met"


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
        (package / "rubric.py").write_text("# Never run by the benchmarks (no --rubrics).\n")
        case = package / "cases" / "example"
        (case / "input").mkdir(parents=True)
        (case / "expected").mkdir()
        (case / "case.toml").write_text('description = "Synthetic case."\n')
        lines += [
            f"[task-classes.{slug}]",
            f'module = "bench.{ident}.registration"',
            'root = "bench"',
            "",
        ]
    (base / "bench.toml").write_text("\n".join(lines))
    return base


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


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


def measure(sizes: list[int], runs: int, check_size: int, first_load_limit: int) -> list[Row]:
    rows: list[Row] = []
    work = Path(tempfile.mkdtemp(prefix="codegenie-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    try:
        for n in sorted(set(sizes) | {check_size}):
            bench = build_bench(work / f"n{n}", n)
            if n in sizes:
                rows += measure_size(bench, n, runs, env, first_load_limit)
            if n == check_size:
                rows += measure_check(bench, n, runs, env)
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
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def measure_size(
    bench: Path, n: int, runs: int, env: dict[str, str], first_load_limit: int
) -> list[Row]:
    rows = []
    manifest = bench / "bench.toml"
    slug = f"task-{n // 2:05d}"
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

    subprocess.run([SCRIPT, "list"], cwd=bench, env=env, stdout=subprocess.DEVNULL, check=True)
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
            "<= 2.5x",
            2.5 if n >= 13000 else None,
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

    value, floor = alternate(
        runs,
        lambda: timed([SCRIPT, "show", slug], bench, env),
        lambda: timed(import_floor, bench, env),
    )
    rows.append(
        Row(
            "`show SLUG`",
            n,
            value * 1e3,
            floor * 1e3,
            "pydantic import + `import_module`",
            "<= 1.25x",
            1.25 if n == 1000 else None,
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

    typo = inprocess("typo", bench, env)
    rows.append(
        Row(
            "typo: suggestions",
            n,
            typo["value"] * 1e3,
            50.0,
            "50 ms",
            "<= 50 ms",
            1.0 if n >= 13000 else None,
        )
    )
    return rows


def measure_check(bench: Path, n: int, runs: int, env: dict[str, str]) -> list[Row]:
    rows = []
    one = statistics.median(
        timed([SCRIPT, "check", "-q", "--jobs", "1"], bench, env) for _ in range(runs)
    )
    two = statistics.median(
        timed([SCRIPT, "check", "-q", "--jobs", "2"], bench, env) for _ in range(runs)
    )
    naive = statistics.median(naive_check(bench, env, 2) for _ in range(runs))
    floors = [import_floors(bench, env) for _ in range(runs)]
    warm = statistics.median(f["warm"] for f in floors)
    forked = statistics.median(f["forked"] for f in floors)
    empty = build_bench(bench.parent / f"empty-{n}", 1)
    startup = statistics.median(
        timed([SCRIPT, "check", "-q", "--jobs", "1"], empty, env) for _ in range(runs)
    )
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
            "(reported)",
            None,
        )
    )
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


def bytecode_cached() -> bool:
    import importlib.util

    import codegenie.eval.loader as loader

    cached = importlib.util.cache_from_source(loader.__file__)
    return Path(cached).exists()


def render(rows: list[Row], runs: int) -> str:
    header = [
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"bytecode of codegenie-eval cached: {'yes' if bytecode_cached() else 'no'}; "
        f"median of {runs} runs; {time.strftime('%Y-%m-%d')}.",
        "",
        "| measurement | N | median | floor | floor is | ratio | target | verdict |",
        "|---|---:|---:|---:|---|---:|---|---|",
    ]
    lines = []
    for row in rows:
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
        floor = f"{row.floor:.2f} {row.unit}" if row.floor is not None else "-"
        what = row.what + (f" ({row.note})" if row.note else "")
        cells = [what, f"{row.n:,}", f"{row.value:.2f} {row.unit}", floor]
        cells += [row.floor_name or "-", ratio, row.target, row.verdict()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(header + lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="10,1000,13000", help="bench sizes (default 10,1000,13000)"
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (default 5)")
    parser.add_argument(
        "--check-size", type=int, default=1000, help="N for the check figures (default 1000)"
    )
    parser.add_argument(
        "--first-load-limit", type=int, default=2000, help="slugs loaded per first-load run"
    )
    parser.add_argument("--output", type=Path, help="write the Markdown table here too")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = measure(sizes, args.runs, args.check_size, args.first_load_limit)
    table = render(rows, args.runs)
    sys.stdout.write(table)
    if args.output:
        args.output.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
