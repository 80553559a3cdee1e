"""The pre-commit hook, driven by the real pre-commit against a consumer repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .test_cli import run

REPO = Path(__file__).resolve().parent.parent
HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))


def test_every_hook_runs_on_every_commit_with_no_file_names() -> None:
    """Both hooks run whatever changed (deletions, any root): always_run, no pass_filenames, no files filter."""
    assert [hook["id"] for hook in HOOKS] == [
        "codegenie-bench-check",
        "codegenie-bench-check-system",
    ]
    assert [hook["language"] for hook in HOOKS] == ["python", "system"]
    for hook in HOOKS:
        assert hook["entry"] == "codegenie-bench check --strict"
        assert hook["always_run"] is True
        assert hook["pass_filenames"] is False
        assert "files" not in hook


def _git(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def consumer(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git repository with a bench, whose pre-commit config uses this repository's system hook."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Curator\n\temail = curator@example.com\n")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    shutil.copy(REPO / ".pre-commit-hooks.yaml", hooks)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "hooks"]):
        assert _git(*args, cwd=hooks, env=env).returncode == 0
    rev = _git("rev-parse", "HEAD", cwd=hooks, env=env).stdout.strip()
    repo = tmp_path / "consumer"
    repo.mkdir()
    assert _git("init", "-q", cwd=repo, env=env).returncode == 0
    assert run("init", cwd=repo).returncode == 0
    assert run("new", "alpha-one", cwd=repo).returncode == 0
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n"
        "      - id: codegenie-bench-check-system\n"
    )
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return repo, env


def test_the_hook_passes_a_clean_bench_and_fails_a_broken_manifest_or_a_deletion(
    consumer: tuple[Path, dict[str, str]],
) -> None:
    """A clean commit passes; a broken bench.toml fails; a commit that only deletes a registration fails."""
    repo, env = consumer
    assert _git("add", "-A", cwd=repo, env=env).returncode == 0
    clean = _git("commit", "-m", "a bench", cwd=repo, env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "codegenie-bench check (installed)" in clean.stdout + clean.stderr

    manifest = repo / "bench.toml"
    manifest.write_text(manifest.read_text() + "oops = 1\n")
    assert _git("add", "bench.toml", cwd=repo, env=env).returncode == 0
    broken = _git("commit", "-m", "broken", cwd=repo, env=env)
    assert broken.returncode != 0
    assert "error[manifest-schema]" in broken.stdout + broken.stderr
    assert _git("checkout", "HEAD", "--", "bench.toml", cwd=repo, env=env).returncode == 0

    assert _git("rm", "-q", "bench/alpha_one/registration.py", cwd=repo, env=env).returncode == 0
    deleted = _git("commit", "-m", "delete only", cwd=repo, env=env)
    assert deleted.returncode != 0
    output = deleted.stdout + deleted.stderr
    assert "Skipped" not in output
    assert "error[module-missing]" in output
    assert _git("log", "--oneline", cwd=repo, env=env).stdout.count("\n") == 1
