"""Benchmarks of the damaged-environment check (issue 39, point 3): what each command pays.

``python benchmarks/env_check.py [RUNS [TREE…]]`` (default 5 runs; the trees
default to this interpreter's ``ray`` package, some thousands of files, and
its whole site-packages) prints run.py's table. For each tree, alternating,
RUNS of each, medians, the page cache warm (the trees were just read):

- the floor: a walk of the tree with one ``lstat`` per entry and nothing
  else, the least any check of a directory's files can do;
- the check every command makes (:func:`listing_digest`: names, kinds,
  sizes, modes, owners, inodes, modification and change times);
- the check made only when that listing moved (:func:`contents_digest`:
  every byte, modes, owners, extended attributes): after a run under
  ``--sandbox none`` wrote into the environment, or a cache was restored.

No test asserts a time.
"""

from __future__ import annotations

import os
import stat
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from codegenie.eval._env.store import contents_digest, listing_digest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the scripts are not a package
    sys.path.insert(0, str(HERE))

if TYPE_CHECKING:  # mypy reads benchmarks/ as a package; run.py runs it as a directory of scripts
    from benchmarks._common import Row, load_average, render
else:
    from _common import Row, load_average, render


def _walk(top: str) -> int:
    """The floor: every entry lstat'ed, in the same order, nothing hashed or read."""
    count = 0
    pending = [top]
    while pending:
        directory = pending.pop()
        with os.scandir(directory) as listing:
            names = sorted(entry.name for entry in listing)
        for name in names:
            path = os.path.join(directory, name)
            status = os.lstat(path)
            count += 1
            if stat.S_ISDIR(status.st_mode):
                pending.append(path)
    return count


def _timed(call: Callable[[str], object], top: str) -> float:
    start = time.perf_counter()
    call(top)
    return (time.perf_counter() - start) * 1e3


def check_rows(runs: int, trees: list[Path]) -> list[Row]:
    rows: list[Row] = []
    for tree in trees:
        top = str(tree)
        _, size, files = listing_digest(top)
        contents_digest(top)  # the page cache warm for every measure alike
        floors: list[float] = []
        listings: list[float] = []
        contents: list[float] = []
        for _ in range(runs):
            floors.append(_timed(_walk, top))
            listings.append(_timed(listing_digest, top))
            contents.append(_timed(contents_digest, top))
        floor = statistics.median(floors)
        note = f"{tree.name}: {files:,} files, {size / 1e6:.1f} MB"
        rows.append(
            Row(
                "env check, every command: the listing",
                files,
                statistics.median(listings),
                floor,
                "walk + lstat",
                "<= 2x the walk",
                2.0,
                note=note,
            )
        )
        rows.append(
            Row(
                "env check, once the listing moved: the contents",
                files,
                statistics.median(contents),
                floor,
                "walk + lstat",
                "paid only after a change",
                None,
                note=note,
            )
        )
    return rows


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 5
    site = Path(sysconfig.get_paths()["purelib"])
    trees = [Path(arg) for arg in argv[1:]] or [site / "ray", site]
    started = load_average()
    rows = check_rows(runs, trees)
    sys.stdout.write(render(rows, runs, (started, load_average())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
