"""The benchmark command keeps working (at N = 10). No test here asserts a time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


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
            "--output",
            str(output),
        ],
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
        "sandboxed `grade --samples --jobs 2 --no-cache`, per sample",
        "`compare` of two such reports",
        "the HTML page of such a report",
    ):
        assert measurement in table
    assert "| measurement | N | median | floor |" in table
    assert "bytecode of codegenie-eval cached:" in table
    assert "load average (1, 5, 15 min)" in table
