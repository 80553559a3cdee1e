"""codegenie.eval._sandbox.disk: what a run adds to its directory, measured, bounded, watched."""

from __future__ import annotations

import os
import select
from pathlib import Path

from codegenie.eval._sandbox.disk import DiskWatch, measure
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval.rubrics import remove_tree


def make_files(directory: Path, count: int, size: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        (directory / f"f{index}").write_bytes(b"x" * size)


def test_a_tree_is_counted_entries_and_allocated_bytes(tmp_path: Path) -> None:
    """Files, directories and links count as entries; bytes as allocated on disk."""
    make_files(tmp_path / "a", 3, 10_000)
    (tmp_path / "a" / "link").symlink_to("f0")
    found = measure(str(tmp_path))
    assert (found.entries, found.complete) == (5, True)  # a, three files, the link
    assert found.allocated >= 30_000


def test_the_count_stops_past_a_bound(tmp_path: Path) -> None:
    """Past ``most_entries`` or ``most_bytes`` the scan ends, marked incomplete."""
    make_files(tmp_path, 50, 4096)
    by_entries = measure(str(tmp_path), most_entries=10)
    assert (by_entries.entries, by_entries.complete) == (11, False)
    by_bytes = measure(str(tmp_path), most_bytes=8192)
    assert by_bytes.complete is False
    assert by_bytes.allocated > 8192


def test_a_tree_deeper_than_path_max_is_counted_whole(tmp_path: Path) -> None:
    """5,000 nested directories of long names, a file at the bottom: every one is counted."""
    name = "d" * 200  # 5,000 of them make a path of a megabyte
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(5000):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        found = measure(str(top), since_ns=0)
        assert (found.entries, found.complete) == (5001, True)
        assert found.largest_new is not None
        assert found.largest_new[0].endswith(f"{name}/bottom")
    finally:
        remove_tree(str(top))  # pytest's own clean-up recurses


def test_the_largest_file_written_since_a_time_is_found(tmp_path: Path) -> None:
    """Only files modified since ``since_ns`` count; the largest of them is named."""
    old = tmp_path / "old"
    old.write_bytes(b"x" * 5000)
    os.utime(old, ns=(1_000_000_000, 1_000_000_000))
    (tmp_path / "new").write_bytes(b"x" * 100)
    found = measure(str(tmp_path), since_ns=2_000_000_000)
    assert found.largest_new == (str(tmp_path / "new"), 100)


def test_the_limits_count_what_the_run_added_beyond_its_copies(tmp_path: Path) -> None:
    """The copies are the baseline; a breach is what was added past the limit, named."""
    make_files(tmp_path / "candidate", 30)
    (tmp_path / "work").mkdir()
    watch = DiskWatch.start(str(tmp_path), Limits(disk_files=10, disk=1))
    try:
        assert watch.check()[0] is None
        make_files(tmp_path / "work", 10)
        assert watch.check()[0] is None  # exactly the limit
        make_files(tmp_path / "more", 1)
        breach, _ = watch.check()
        assert breach is not None
        assert (breach.limit, breach.reason) == ("disk-files", "disk limit of 10 files exceeded")
        (tmp_path / "more" / "big").write_bytes(os.urandom(2 * 1024 * 1024))
        watch_bytes = DiskWatch.start(str(tmp_path), Limits(disk_files=None, disk=1))
        (tmp_path / "work" / "big").write_bytes(os.urandom(2 * 1024 * 1024))
        breach, _ = watch_bytes.check()
        assert breach is not None
        assert (breach.limit, breach.reason) == ("disk", "disk limit of 1 MiB exceeded")
        watch_bytes.close()
    finally:
        watch.close()


def test_a_breach_while_the_run_runs_wakes_the_supervisor(tmp_path: Path) -> None:
    """The watch's descriptor becomes readable once a breach is found, and the breach is kept."""
    watch = DiskWatch.start(str(tmp_path), Limits(disk_files=5))
    try:
        served = watch.watch()
        assert list(served) == [watch.wake_fd]
        make_files(tmp_path / "many", 50)
        readable, _, _ = select.select([watch.wake_fd], [], [], 60)
        assert readable == [watch.wake_fd]
        assert served[watch.wake_fd]() is True  # the supervisor stops the run
        assert watch.breach is not None
        assert watch.breach.limit == "disk-files"
    finally:
        watch.close()
    watch.close()  # idempotent


def test_without_disk_limits_nothing_is_watched(tmp_path: Path) -> None:
    """No limit, no thread, nothing to serve."""
    watch = DiskWatch.start(str(tmp_path), Limits(disk=None, disk_files=None))
    try:
        assert watch.watch() == {}
    finally:
        watch.close()
