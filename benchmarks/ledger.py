"""Benchmarks of the ledger's interpreter key: what it costs, and what it reuses after a change.

Usage (from the repository root, with the package installed):

    python benchmarks/ledger.py [CASES [RUNS]]      (default 40 cases, 5 runs)

Measures, as the median of RUNS, on this machine:

- **cost** of the packages part of a run's key, paid once per ``grade`` or
  ``check --rubrics``: :func:`installed` of the running interpreter (the
  distributions, ``.pth`` files and editable sources' modules), and beside
  it what the alternatives would cost: a stat of every module file of the
  site-packages and of the standard library (to see a file edited by hand
  in a normal install), and, for the "key a run on the modules it loaded"
  design, the module files a standard-library-only rubric loads, stated
  and hashed at every lookup;
- **hit rate**: a bench of CASES cases whose rubric imports only the
  standard library, graded once through the console script of a virtual
  environment built here (so that the change does not touch this one),
  then after each change — an unrelated distribution added, a module of an
  editable install edited that the rubric does not import, one it does
  import — graded again: the results reused (measured, the current key),
  and what a key on the loaded modules would have reused (computed from
  the modules the rubric loads, the same for every case).

No test asserts any of these figures.
"""

from __future__ import annotations

import hashlib
import json
import os
import site
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import venv
from collections.abc import Callable
from pathlib import Path

from codegenie.eval._sandbox.packages import _source_digest, installed

RUBRIC = """\
import json, sys
from pathlib import Path

{imports}
answer = (Path(sys.argv[2]) / "answer.txt").read_text().strip()
passed = answer == "solved"
print(json.dumps({{"passed": passed}}))
sys.exit(0 if passed else 1)
"""
# What a rubric that imports only the standard library loads (the one of the hit rates).
_LOADED = (
    "import json, sys, os, pathlib\n"
    "print(json.dumps(sorted({getattr(m, '__file__', None) or '' for m in "
    "list(sys.modules.values())} - {''})))"
)


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def module_files(root: str) -> list[str]:
    found = []
    for top, directories, files in os.walk(root):
        directories[:] = [d for d in directories if d != "__pycache__"]
        found += [os.path.join(top, f) for f in files if f.endswith((".py", ".so"))]
    return found


def stat_all(paths: list[str]) -> None:
    for path in paths:
        os.stat(path)


def hash_times(paths: list[str], times: int) -> None:
    for _ in range(times):
        hash_all(paths)


def hash_all(paths: list[str]) -> None:
    for path in paths:
        with open(path, "rb") as file:
            hashlib.blake2b(file.read())


def harness(base: Path) -> tuple[Path, Path, Path]:
    """A venv whose console script runs this package; an editable source; its site-packages."""
    import codegenie.eval

    home = base / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(home)
    python = home / "bin" / "python"
    found = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    own_site = Path(found.stdout.strip())
    source = base / "src"
    source.mkdir()
    (source / "imported_mod.py").write_text("ANSWER = 1\n")
    (source / "unused_mod.py").write_text("ANSWER = 1\n")
    package = Path(codegenie.eval.__file__).parents[2]
    lines = [str(package), *site.getsitepackages(), str(source)]
    (own_site / "harness.pth").write_text("\n".join(lines) + "\n")
    script = home / "bin" / "codegenie-bench"
    script.write_text(
        f"#!{python}\nimport sys\nfrom codegenie.eval.__main__ import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return script, source, own_site


def bench(base: Path, cases: int, imports: str) -> Path:
    repo = base / "repo"
    package = repo / "bench" / "timed"
    (package / "cases").mkdir(parents=True)
    (repo / "bench.toml").write_text(
        'schema-version = 1\n\n[task-classes.timed]\nmodule = "bench.timed.registration"\n'
        'root = "bench"\n'
    )
    (package / "registration.py").write_text(
        "from codegenie.eval import register_task_class\n\n\n"
        '@register_task_class("timed")\nclass Timed:\n    pass\n'
    )
    (package / "rubric.py").write_text(RUBRIC.format(imports=imports))
    for index in range(cases):
        case = package / "cases" / f"c{index:03d}"
        for side, text in (("input", "todo\n"), ("expected", "solved\n")):
            (case / side).mkdir(parents=True)
            (case / side / "answer.txt").write_text(text)
        (case / "case.toml").write_text("")
        candidate = repo / "runs" / f"c{index:03d}"
        candidate.mkdir(parents=True)
        (candidate / "answer.txt").write_text("solved\n")
    return repo


def reused(script: Path, repo: Path) -> tuple[int, int]:
    done = subprocess.run(
        [str(script), "--format", "json", "grade", "timed", "runs", "--sandbox", "none"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    ledger = json.loads(done.stdout)["ledger"]
    return ledger["reused"], ledger["looked_up"]


def _ms(value: float, digits: int = 1) -> str:
    return f"{value:.{digits}f} ms"


def _costs(cases: int, runs: int) -> list[tuple[str, str]]:
    sites = site.getsitepackages()
    site_files = [f for s in sites for f in module_files(s)]
    stdlib_files = module_files(sysconfig.get_paths()["stdlib"])
    found = subprocess.run(
        [sys.executable, "-I", "-c", _LOADED], capture_output=True, text=True, check=True
    )
    loaded: list[str] = json.loads(found.stdout)
    few = max(1, runs // 2)
    sources = sorted(installed(sites).parsed()["sources"])
    return [
        (
            "packages part of the key, this venv (installed())",
            _ms(median_ms(lambda: installed(sites), runs)),
        ),
        (
            f"of which the module files of the {len(sources)} editable source(s)",
            _ms(median_ms(lambda: [_source_digest(path) for path in sources], runs)),
        ),
        (
            f"stat of every site-packages module ({len(site_files):,} files)",
            _ms(median_ms(lambda: stat_all(site_files), runs)),
        ),
        (
            f"stat of every stdlib module ({len(stdlib_files):,} files)",
            _ms(median_ms(lambda: stat_all(stdlib_files), runs)),
        ),
        (
            f"loaded-modules key: stat the {len(loaded)} files a stdlib rubric loads, one lookup",
            _ms(median_ms(lambda: stat_all(loaded), runs), 2),
        ),
        (
            f"loaded-modules key: hash the {len(loaded)} files, one lookup",
            _ms(median_ms(lambda: hash_all(loaded), runs), 2),
        ),
        (
            f"loaded-modules key: hash them for {cases} lookups (one grade, not memoised)",
            _ms(median_ms(lambda: hash_times(loaded, cases), few)),
        ),
    ]


def _hit_rates(cases: int) -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix="codegenie-ledger-bench-") as temporary:
        base = Path(temporary)
        os.environ["XDG_CACHE_HOME"] = str(base / "cache")
        script, source, own_site = harness(base)
        repo = bench(base, cases, "import imported_mod")
        first = reused(script, repo)
        start = time.perf_counter()
        again = reused(script, repo)
        cached = (time.perf_counter() - start) * 1000
        (own_site / "orbit-2.9.0.dist-info").mkdir()
        added = reused(script, repo)
        (source / "unused_mod.py").write_text("ANSWER = 2\n")
        unused = reused(script, repo)
        (source / "imported_mod.py").write_text("ANSWER = 2\n")
        used = reused(script, repo)
    every = f"{cases}/{cases}"
    return [
        (
            "graded, then again unchanged: reused",
            f"{first[0]}/{first[1]}, then {again[0]}/{again[1]}",
        ),
        ("the unchanged grade, all reused (one run)", _ms(cached, 0)),
        (
            "an unrelated distribution added: reused (a loaded-modules key)",
            f"{added[0]}/{added[1]} ({every})",
        ),
        (
            "an editable module the rubric does not import edited",
            f"{unused[0]}/{unused[1]} ({every})",
        ),
        ("an editable module the rubric imports edited", f"{used[0]}/{used[1]} (0/{cases})"),
    ]


def main(argv: list[str]) -> int:
    cases = int(argv[0]) if argv else 40
    runs = int(argv[1]) if len(argv) > 1 else 5
    rows = _costs(cases, runs) + _hit_rates(cases)
    load = os.getloadavg()[0]
    print(f"load average {load:.2f}; medians of {runs} runs; Python {sys.version.split()[0]}\n")
    print("| measure | median |\n|---|---|")
    for what, value in rows:
        print(f"| {what} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
