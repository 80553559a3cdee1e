"""The package's metadata is complete, and CI builds it and checks it with twine."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_metadata_is_complete() -> None:
    """pyproject names a description, a readme, a license file, Requires-Python and classifiers."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["description"]
    assert project["readme"] == "README.md"
    assert project["license"] == "MIT"
    assert all((REPO / name).is_file() for name in project["license-files"])
    assert project["requires-python"] == ">=3.11"
    classifiers = project["classifiers"]
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Typing :: Typed" in classifiers
    assert {"build>=1.2", "twine>=5.1"} <= set(project["optional-dependencies"]["test"])


def test_ci_builds_the_sdist_and_wheel_and_runs_twine_check() -> None:
    """.ci/run builds both distributions and checks their metadata strictly."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "-m build --outdir dist ." in ci
    assert "twine check --strict dist/*" in ci
