"""The command line as a user runs it: the installed console script in a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval.cli import main

from .factory import make_bench

REPO = Path(__file__).resolve().parent.parent


def _script() -> str:
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_script(), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_main_job_resolves_every_shipped_task_class() -> None:
    """On the shipped bench.toml the command prints both task classes and exits 0."""
    result = run(cwd=REPO)
    assert result.returncode == 0, result.stderr
    slugs = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert slugs == ["vuln-remediation", "migration-chainguard-distroless"]


def test_main_job_json_output() -> None:
    """--format json prints one document with every resolved task class."""
    result = run("--format", "json", cwd=REPO)
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert document["manifest"] == str(REPO / "bench.toml")
    assert [tc["slug"] for tc in document["task_classes"]] == [
        "vuln-remediation",
        "migration-chainguard-distroless",
    ]
    assert all(Path(tc["rubric"]).is_file() for tc in document["task_classes"])


def test_no_manifest_exits_4_with_a_diagnostic(tmp_path: Path) -> None:
    """Without a bench.toml the command exits 4 and says where it looked, no traceback."""
    result = run(cwd=tmp_path)
    assert result.returncode == 4
    assert result.stdout == ""
    assert "error[manifest-not-found]" in result.stderr
    assert str(tmp_path / "bench.toml") in result.stderr
    assert "Traceback" not in result.stderr


def test_failure_as_json_goes_to_stdout(tmp_path: Path) -> None:
    """Under --format json a failure is {"error": {...}} on stdout, with the error's exit code."""
    result = run("--format", "json", cwd=tmp_path)
    assert result.returncode == 4
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "BenchManifestNotFound"
    assert error["exit_code"] == 4
    assert error["attributes"] == {"path": str(tmp_path / "bench.toml")}


def test_invalid_manifest_lists_every_problem(tmp_path: Path) -> None:
    """An invalid manifest exits 4 with FILE:LINE:COL lines for each problem."""
    (tmp_path / "bench.toml").write_text("schema-version = 2\nmodul = 1\n")
    result = run(cwd=tmp_path)
    assert result.returncode == 4
    assert f"{tmp_path / 'bench.toml'}:1:1: schema-version:" in result.stderr
    assert f"{tmp_path / 'bench.toml'}:2:1: modul:" in result.stderr


def test_registration_output_never_reaches_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a registration prints goes to stderr, so JSON on stdout stays valid."""
    bench = make_bench(tmp_path, "foo", before="print('noise')")
    assert main(["--manifest", str(bench.manifest), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["task_classes"][0]["slug"] == "foo"
    assert "noise" in captured.err
