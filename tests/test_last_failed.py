"""The last-failed cache of grade --lf: private, authenticated, never an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegenie.eval._cache.last_failed import DIRECTORY, read_last_failed, write_last_failed


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache home."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_round_trip_keeps_failures_of_cases_not_graded_now(home: Path, tmp_path: Path) -> None:
    """A grading replaces what it graded; the failures of other cases are kept."""
    manifest = tmp_path / "bench.toml"
    assert read_last_failed(manifest, "alpha") is None
    write_last_failed(manifest, "alpha", ["a", "b", "c"], ["a", "c"])
    assert read_last_failed(manifest, "alpha") == frozenset({"a", "c"})
    write_last_failed(manifest, "alpha", ["a"], [])
    assert read_last_failed(manifest, "alpha") == frozenset({"c"})
    assert read_last_failed(manifest, "beta") is None
    assert read_last_failed(tmp_path / "other.toml", "alpha") is None


def test_an_edited_record_is_a_miss(home: Path, tmp_path: Path) -> None:
    """A record edited by hand (its keyed checksum no longer matches) reads as nothing known."""
    manifest = tmp_path / "bench.toml"
    write_last_failed(manifest, "alpha", ["a"], ["a"])
    (directory,) = home.rglob(DIRECTORY)
    (record,) = [p for p in directory.iterdir() if p.suffix == ".json"]
    record.write_bytes(record.read_bytes().replace(b'"a"', b'"b"'))
    assert read_last_failed(manifest, "alpha") is None
    assert directory.stat().st_mode & 0o777 == 0o700
