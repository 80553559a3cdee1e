"""Attacks on the task classes' own environments, from outside: each one a defect found and fixed.

A malicious package, a careless author, a shared or planted environments
directory, a Python that is a shim, a store that drifts under one digest.
Every environment is built from wheels made here (no index); the CLI runs
as the installed console script, in a subprocess.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from codegenie.eval._env.build import build_environment
from codegenie.eval._env.python import find_python
from codegenie.eval._env.spec import EnvironmentSpec
from codegenie.eval._env.store import open_environment

from .wheels import make_wheel, offline_requirements

OWN = find_python(None)


@pytest.fixture
def env_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "environments"
    monkeypatch.setenv("CODEGENIE_ENV_DIR", str(directory))
    return directory


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    directory = tmp_path / "wheels"
    make_wheel(directory, "tinypkg", "1.0", "VERSION = '1.0'\n")
    return directory


def spec_of(path: Path, python: str | None = None) -> EnvironmentSpec:
    return EnvironmentSpec(path, path.read_bytes(), python)


def add_to_wheel(wheel: Path, name: str, data: bytes) -> None:
    """Add the file ``name`` (at the top of site-packages) to ``wheel``, its RECORD too."""
    with zipfile.ZipFile(wheel) as archive:
        files = {item: archive.read(item) for item in archive.namelist()}
    record = next(item for item in files if item.endswith(".dist-info/RECORD"))
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    files[record] += f"{name},sha256={digest},{len(data)}\n".encode()
    files[name] = data
    with zipfile.ZipFile(wheel, "w") as archive:
        for item, content in files.items():
            archive.writestr(item, content)


# --- A package's code runs only in the sandbox: never at build time, for a wheel ------------


def test_a_wheels_pth_file_does_not_run_outside_the_sandbox_at_build(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    """A .pth file runs at every interpreter start: the build must not start one with site."""
    ran = tmp_path / "ran"
    ran.mkdir()
    wheel = make_wheel(wheels, "evilpkg", "1.0", "X = 1\n")
    code = f"import os; open(os.path.join({str(ran)!r}, str(os.getpid())), 'w').close()\n"
    add_to_wheel(wheel, "evil.pth", code.encode())
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "evilpkg==1.0")
    assert OWN is not None
    environment = build_environment(spec_of(requirements), OWN, task_class="evil")
    assert list(ran.iterdir()) == []  # nothing of the package ran on the host
    # Still installed, and compiled (the sandbox mounts it read-only).
    assert (environment.path / "lib").is_dir()
    assert list(environment.path.rglob("evil.pth"))
    assert list(environment.path.rglob("evilpkg/__pycache__/__init__.*.pyc"))
    assert open_environment(environment.digest) is not None
