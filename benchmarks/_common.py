"""What every benchmark script shares: the interpreter and console script, a table's rows.

`run.py` and each of its row groups (`cases.py`, `sandbox.py`, ...) import
these names from here, and this module imports none of theirs, so the
imports between the scripts run one way: from `run.py` to its row groups,
from both to this module. A row group that is run alone prints its rows
with `render`, as `run.py` prints all of them.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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


def timed(command: list[str], cwd: Path, env: dict[str, str], *, check: bool = True) -> float:
    started = time.perf_counter()
    subprocess.run(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=None if check else subprocess.DEVNULL,
        check=check,
    )
    return time.perf_counter() - started


def bytecode_cached() -> bool:
    import importlib.util

    import codegenie.eval.loader as loader

    cached = importlib.util.cache_from_source(loader.__file__)
    return Path(cached).exists()


def load_average() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def render(rows: list[Row], runs: int, loads: tuple[str, str] = ("", "")) -> str:
    header = [
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"bytecode of codegenie-eval cached: {'yes' if bytecode_cached() else 'no'}; "
        f"median of {runs} runs; {time.strftime('%Y-%m-%d')}; "
        f"load average (1, 5, 15 min) {loads[0]} at the start, {loads[1]} at the end.",
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
