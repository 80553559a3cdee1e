"""bench_digest: every file of every root counts, however many; what cannot be hashed says why.

The digest is what ``merge`` compares to prove that shards saw one bench. A
root of more than 100,000 entries (the bound of a run's copies) is hashed
whole, streaming: nothing held in memory grows with the tree but the names of
the directories being walked. What cannot be hashed (a directory listing more
names than the walk holds at once, a directory that cannot be read) leaves
the report without a digest, with a warning that says which root and why,
never a digest that two different benches share.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval._reports import digest as digest_module
from codegenie.eval._reports.digest import bench_digest, bench_digest_of
from codegenie.eval._tree import ENTRIES_LIMIT

from .factory import Bench, make_bench


def run(bench: Bench, *args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    return subprocess.run(
        [script, *args], cwd=bench.base, capture_output=True, text=True, timeout=600, check=False
    )


def report(bench: Bench) -> dict[str, Any]:
    """Run `check --format json` in the bench; return its report."""
    done = run(bench, "check", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def big_tree(directory: Path, entries: int, per_directory: int = 1000) -> None:
    """Write ``entries`` empty files in directories of ``per_directory`` under ``directory``."""
    for start in range(0, entries, per_directory):
        part = directory / f"d{start // per_directory:04d}"
        part.mkdir(parents=True)
        for index in range(start, min(start + per_directory, entries)):
            os.close(os.open(part / f"f{index:06d}", os.O_WRONLY | os.O_CREAT, 0o644))


@pytest.mark.xdist_group("big-trees")
def test_a_root_beyond_100000_entries_is_hashed_whole(tmp_path: Path) -> None:
    """Two benches whose roots of 101,000 files differ in one byte get different digests.

    Before, a root beyond the copies' 100,000 entries hashed as the word
    "unreadable": any two such benches had one digest, and merge took shards
    of different benches for one.
    """
    bench = make_bench(tmp_path / "repo", "aa", parts=True)
    data = bench.root / "aa" / "data"
    big_tree(data, ENTRIES_LIMIT + 1000)
    first = report(bench)["bench_digest"]
    assert first.startswith("sha256:")
    assert report(bench)["bench_digest"] == first  # the same tree, the same digest
    (data / "d0050" / "f050500").write_bytes(b"x")
    second = report(bench)["bench_digest"]
    assert second.startswith("sha256:")
    assert second != first


def test_an_edit_anywhere_in_a_root_changes_the_digest(tmp_path: Path) -> None:
    """A file's bytes, a new empty file, a removed one, a mode: each is another bench."""
    bench = make_bench(tmp_path / "repo", "aa", parts=True)
    data = bench.root / "aa" / "data"
    big_tree(data, 30, per_directory=10)
    seen = {bench_digest(bench.manifest)}
    (data / "d0001" / "f000015").write_bytes(b"y")
    seen.add(bench_digest(bench.manifest))
    (data / "d0001" / "new").touch()
    seen.add(bench_digest(bench.manifest))
    (data / "d0002" / "f000020").unlink()
    seen.add(bench_digest(bench.manifest))
    (data / "d0000" / "f000001").chmod(0o755)
    seen.add(bench_digest(bench.manifest))
    assert None not in seen
    assert len(seen) == 5


def test_a_directory_listing_more_names_than_held_has_no_digest_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond the names a walk holds at once: no digest, the root and the bound named."""
    bench = make_bench(tmp_path / "repo", "aa", parts=True)
    big_tree(bench.root / "aa" / "data", 40, per_directory=40)
    monkeypatch.setattr(digest_module, "HELD_NAMES", 25)
    found = bench_digest_of(bench.manifest)
    assert found.value is None
    [(root, reason)] = found.refused
    assert root == "bench"
    assert "more than 25 names" in reason
    monkeypatch.setattr(digest_module, "HELD_NAMES", 100)
    assert bench_digest_of(bench.manifest).value is not None  # the same tree, within the bound


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_an_unreadable_directory_has_no_digest_and_the_report_says_why(tmp_path: Path) -> None:
    """A directory of a root that cannot be listed: bench_digest null, one warning naming it."""
    bench = make_bench(tmp_path / "repo", "aa", parts=True)
    locked = bench.root / "aa" / "data"
    locked.mkdir()
    locked.chmod(0)
    try:
        done = run(bench, "check", "--format", "json")
    finally:
        locked.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["bench_digest"] is None
    assert "no bench_digest" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_refused_root_is_a_warning_and_a_null_digest_through_the_console_script(
    tmp_path: Path,
) -> None:
    """A root too deep to walk: the JSON report's bench_digest is null, stderr says which root."""
    bench = make_bench(tmp_path / "repo", "aa", parts=True)
    deep = bench.root / "aa" / "data"
    deep.mkdir()
    # 520 levels of one-letter names, made relative to stay under PATH_MAX.
    here = os.open(deep, os.O_RDONLY)
    try:
        for _ in range(520):
            os.mkdir("d", dir_fd=here)
            below = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = below
    finally:
        os.close(here)
    done = run(bench, "check", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["bench_digest"] is None
    assert "warning: no bench_digest" in done.stderr
    assert "bench" in done.stderr
    assert "deeper than 512 levels" in done.stderr
    quiet = run(bench, "-q", "check", "--format", "json")
    assert quiet.stderr == ""
