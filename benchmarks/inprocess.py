"""In-process measurements, run by benchmarks/run.py in a fresh interpreter each time.

Usage: python benchmarks/inprocess.py KIND BENCH_DIR [LIMIT]

Prints one JSON object of timings in seconds. KIND is one of:
- ``first-load``: per-slug cost of the first ``load_task_class`` of LIMIT
  slugs, and of a bare ``importlib.import_module`` of the same registrations
  copied under another package name (the floor);
- ``cached-call``: a repeated ``load_task_class`` call, and one log event that
  the configured structlog level filters out;
- ``manifest-load``: ``BenchManifest.load`` without any cache, and a bare
  ``tomllib`` parse of the same file (the floor);
- ``typo``: resolving a mistyped slug until its suggestions are known, on a
  validated manifest (``BenchManifest.load``);
- ``typo-cached``: the same on the manifest a fresh process gets from the
  cache (``load_manifest_cached``; the cache must be warm), first call only;
- ``resolve-memory``: a fresh process's first ``load_task_class`` of LIMIT's
  slug (``task-NNNNN``), then its resident memory (now and at its peak);
- ``static``: ``check``'s static pass over the whole bench (every slug), its
  time and the process's peak resident memory.
"""

from __future__ import annotations

import importlib
import json
import logging
import shutil
import statistics
import sys
import time
import tomllib
from pathlib import Path


def _quiet_structlog() -> None:
    import structlog

    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        cache_logger_on_first_use=True,
    )


def first_load(bench: Path, limit: int) -> dict[str, float]:
    _quiet_structlog()
    from codegenie.eval import BenchManifest, TaskClassRegistry
    from codegenie.eval.loader import load_task_class
    from codegenie.eval.registry import registering_into

    manifest = BenchManifest.load(bench / "bench.toml")
    slugs = list(manifest.slugs())[: limit + 1]
    floor_root = bench / "floor_copy"
    if not floor_root.exists():
        shutil.copytree(bench / "bench", floor_root / "floorbench")
    registry = TaskClassRegistry()
    load_task_class(slugs[0], bench / "bench", registry=registry)  # reads the manifest once
    started = time.perf_counter()
    for slug in slugs[1:]:
        load_task_class(slug, bench / "bench", registry=registry)
    ours = (time.perf_counter() - started) / (len(slugs) - 1)

    sys.path.insert(0, str(floor_root))
    modules = [f"floorbench.{slug.replace('-', '_')}.registration" for slug in slugs]
    with registering_into(TaskClassRegistry()):
        importlib.import_module(modules[0])
        started = time.perf_counter()
        for module in modules[1:]:
            importlib.import_module(module)
        floor = (time.perf_counter() - started) / (len(modules) - 1)
    return {"value": ours, "floor": floor}


def cached_call(bench: Path) -> dict[str, float]:
    _quiet_structlog()
    import structlog

    from codegenie.eval import BenchManifest, TaskClassRegistry
    from codegenie.eval.loader import load_task_class

    slug = BenchManifest.load(bench / "bench.toml").slugs()[0]
    registry = TaskClassRegistry()
    root = bench / "bench"
    load_task_class(slug, root, registry=registry)
    calls = 200_000
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            load_task_class(slug, root, registry=registry)
        samples.append((time.perf_counter() - started) / calls)
    logger = structlog.get_logger("benchmark")
    events = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            logger.debug("loader.task_class_cache_hit", name=slug, bench_root="r", module="m")
        events.append((time.perf_counter() - started) / calls)
    return {"value": statistics.median(samples), "floor": statistics.median(events)}


def manifest_load(bench: Path) -> dict[str, float]:
    from codegenie.eval import BenchManifest

    path = bench / "bench.toml"
    BenchManifest.load(path)  # build the models' validators once, as any process would
    ours, floor = [], []
    for _ in range(5):
        started = time.perf_counter()
        with path.open("rb") as file:
            tomllib.load(file)
        floor.append(time.perf_counter() - started)
        started = time.perf_counter()
        BenchManifest.load(path)
        ours.append(time.perf_counter() - started)
    return {"value": statistics.median(ours), "floor": statistics.median(floor)}


def typo(bench: Path) -> dict[str, float]:
    from codegenie.eval import BenchManifest
    from codegenie.eval.errors import TaskClassNotFound

    manifest = BenchManifest.load(bench / "bench.toml")
    mistyped = _mistyped(manifest.slugs())
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        suggestions: tuple[str, ...] = ()
        try:
            manifest.entry(mistyped)
        except TaskClassNotFound as exc:
            suggestions = exc.suggestions
        samples.append(time.perf_counter() - started)
        if not suggestions:
            raise SystemExit(f"no suggestion for {mistyped!r}")
    return {"value": statistics.median(samples), "floor": 0.0}


def _mistyped(slugs: tuple[str, ...]) -> str:
    wanted = slugs[len(slugs) // 2]
    return wanted[1] + wanted[0] + wanted[2:]  # swap the first two letters


def typo_cached(bench: Path) -> dict[str, float]:
    from codegenie.eval._cache.served import ServedManifest
    from codegenie.eval.errors import TaskClassNotFound
    from codegenie.eval.manifest import load_manifest_cached

    manifest = load_manifest_cached(str(bench / "bench.toml"))
    if not isinstance(manifest, ServedManifest) or manifest.served is None:
        raise SystemExit("the manifest was not served from the cache: warm it first")
    mistyped = _mistyped(manifest.served.entry.slugs())
    manifest = load_manifest_cached(str(bench / "bench.toml"))
    started = time.perf_counter()
    suggestions: tuple[str, ...] = ()
    try:
        manifest.entry(mistyped)
    except TaskClassNotFound as exc:
        suggestions = exc.suggestions
    elapsed = time.perf_counter() - started
    if not suggestions:
        raise SystemExit(f"no suggestion for {mistyped!r}")
    return {"value": elapsed, "floor": 0.0}


def _rss_kib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return float(line.split()[1])
    return 0.0


def resolve_memory(bench: Path, slug: str) -> dict[str, float]:
    import resource

    from codegenie.eval.loader import load_task_class

    load_task_class(slug, bench / "bench")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"value": _rss_kib() / 1024, "floor": peak / 1024}


def static(bench: Path) -> dict[str, float]:
    import resource

    from codegenie.eval.check.static import check_static

    started = time.perf_counter()
    result = check_static(bench / "bench.toml", lambda _slug: True)
    elapsed = time.perf_counter() - started
    if result.diagnostics or not result.targets:
        raise SystemExit(f"unexpected static result: {result.diagnostics[:3]}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"value": elapsed, "floor": peak / 1024}


def main(argv: list[str]) -> int:
    kind, bench = argv[1], Path(argv[2])
    if kind == "first-load":
        result = first_load(bench, int(argv[3]))
    elif kind == "cached-call":
        result = cached_call(bench)
    elif kind == "manifest-load":
        result = manifest_load(bench)
    elif kind == "typo":
        result = typo(bench)
    elif kind == "typo-cached":
        result = typo_cached(bench)
    elif kind == "resolve-memory":
        result = resolve_memory(bench, argv[3])
    elif kind == "static":
        result = static(bench)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
