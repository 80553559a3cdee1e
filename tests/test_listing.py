"""The cache of validated manifests behind `list`: content-keyed, and never changes a result."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval._cache.listing import read_cached
from codegenie.eval._cache.store import store_listing

from .factory import Bench, make_bench


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python -m codegenie.eval` (the console script's entry) in a subprocess."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def listing(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run("-m", "codegenie.eval", "list", *args, cwd=cwd, env=env)


def cache_files() -> list[Path]:
    root = Path(os.environ["XDG_CACHE_HOME"]) / "codegenie-eval" / "manifests"
    return sorted(root.glob("*.cache")) if root.is_dir() else []


def imported_modules(cwd: Path, *args: str) -> set[str]:
    result = run("-X", "importtime", "-m", "codegenie.eval", "list", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return make_bench(tmp_path, "alpha", "beta-two", "gamma")


@pytest.mark.parametrize(
    "args",
    [(), ("--format", "json"), ("--format=json", "-q"), ("--manifest", "bench.toml"), ("-q",)],
)
def test_cached_output_is_identical_to_a_fresh_validation(
    bench: Bench, args: tuple[str, ...]
) -> None:
    """The first run validates and caches; the second is served from the cache, byte for byte alike."""
    fresh = listing(bench.base, *args, "--no-cache")
    first = listing(bench.base, *args)
    second = listing(bench.base, *args)
    assert fresh.returncode == first.returncode == second.returncode == 0
    assert fresh.stdout == first.stdout == second.stdout
    assert fresh.stderr == first.stderr == second.stderr == ""
    assert len(cache_files()) == 1


def test_a_cached_run_imports_neither_pydantic_nor_the_manifest_model(bench: Bench) -> None:
    """Served from the cache, `list` does not import pydantic: proof that the cache was used."""
    first = imported_modules(bench.base)
    second = imported_modules(bench.base)
    assert "pydantic" in first
    assert "pydantic" not in second
    assert "codegenie.eval.manifest" not in second
    assert "hashlib" not in second  # OpenSSL's load would be a tenth of the run
    assert "structlog" not in first | second


def test_an_edit_with_the_same_mtime_is_seen(bench: Bench) -> None:
    """The cache is keyed on content: an edit that keeps size and mtime is still read."""
    listing(bench.base)
    stat = bench.manifest.stat()
    text = bench.manifest.read_text().replace("gamma", "delta")
    (bench.root / "gamma").rename(bench.root / "delta")
    bench.manifest.write_text(text)
    os.utime(bench.manifest, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert bench.manifest.stat().st_size == stat.st_size
    result = listing(bench.base)
    assert "delta" in result.stdout
    assert "gamma" not in result.stdout


def test_an_invalid_manifest_is_never_cached(bench: Bench) -> None:
    """An invalid manifest fails every time and leaves no cache entry."""
    bench.manifest.write_text(bench.manifest.read_text() + "oops = 1\n")
    assert listing(bench.base).returncode == 4
    assert listing(bench.base).returncode == 4
    assert cache_files() == []


def _damage(kind: str, file: Path) -> None:
    blob = file.read_bytes()
    if kind == "garbage":
        file.write_bytes(b"\x00\xffnot a cache at all")
    elif kind == "truncated":
        file.write_bytes(blob[: len(blob) // 2])
    elif kind == "empty":
        file.write_bytes(b"")
    elif kind == "foreign-version":
        magic, rest = blob.split(b"\n", 1)
        file.write_bytes(magic.rsplit(b" ", 1)[0] + b" 99.0.0\n" + rest)
    elif kind == "flipped-payload":
        file.write_bytes(blob.replace(b"beta-two", b"beta-tw0"))
    elif kind == "directory":
        file.unlink()
        file.mkdir()
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["garbage", "truncated", "empty", "foreign-version", "flipped-payload", "directory"]
)
def test_a_damaged_cache_is_ignored_and_never_changes_the_result(bench: Bench, kind: str) -> None:
    """Corrupt, truncated, foreign-version or otherwise wrong cache files are ignored."""
    expected = listing(bench.base, "--no-cache").stdout
    listing(bench.base)
    [file] = cache_files()
    _damage(kind, file)
    result = listing(bench.base)
    assert result.returncode == 0
    assert result.stdout == expected
    assert result.stderr == ""


def test_an_unwritable_cache_is_ignored(bench: Bench, tmp_path: Path) -> None:
    """A cache location that cannot be created does not stop or change `list`."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    env = {"XDG_CACHE_HOME": str(blocker)}
    expected = listing(bench.base, "--no-cache").stdout
    for _ in range(2):
        result = listing(bench.base, env=env)
        assert result.returncode == 0
        assert result.stdout == expected
        assert result.stderr == ""


def test_no_cache_neither_reads_nor_writes(bench: Bench) -> None:
    """--no-cache ignores even a well-formed cache entry and writes none."""
    data = bench.manifest.read_bytes()
    store_listing(data, (["poisoned"], ["bench.poisoned.registration"], ["bench"]), version=1)
    assert "poisoned" in listing(bench.base).stdout  # a well-formed entry is trusted...
    result = listing(bench.base, "--no-cache")
    assert "poisoned" not in result.stdout  # ...unless the cache is bypassed
    assert "alpha" in result.stdout


def test_xdg_cache_home_is_respected_and_a_relative_one_ignored(
    bench: Bench, tmp_path: Path
) -> None:
    """The cache goes under $XDG_CACHE_HOME, or ~/.cache when it is unset or relative."""
    home = tmp_path / "home"
    home.mkdir()
    listing(bench.base, env={"XDG_CACHE_HOME": "relative/path", "HOME": str(home)})
    assert list((home / ".cache" / "codegenie-eval" / "manifests").glob("*.cache"))
    assert not (bench.base / "relative").exists()


def test_cache_files_are_named_by_content_hash_and_written_whole(bench: Bench) -> None:
    """The cache file name is the BLAKE2b-256 of the manifest; no temporary file is left over."""
    listing(bench.base)
    digest = hashlib.blake2b(bench.manifest.read_bytes(), digest_size=32).hexdigest()
    assert [f.name for f in cache_files()] == [f"{digest}.cache"]


def test_read_cached_round_trip() -> None:
    """What store writes, read_cached returns; other bytes miss."""
    entries = (["a-b", "c-d"], ["x.a_b.registration", "x.c_d.registration"], ["x", "x"])
    store_listing(b"manifest bytes", entries, version=1)
    assert read_cached(b"manifest bytes") == entries
    assert read_cached(b"other bytes") is None


def test_old_cache_files_are_pruned() -> None:
    """The cache keeps a bounded number of manifests."""
    for n in range(40):
        store_listing(f"manifest {n}".encode(), (["a-b"], ["x.a_b.registration"], ["x"]), version=1)
    assert len(cache_files()) <= 32
