"""The package's one atomic write: whole or not at all, synced, never through a link."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from codegenie.eval._atomic import write_atomically


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record what each fsync synced: ``file`` or ``directory``."""
    kinds: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        kinds.append("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return kinds


def test_a_path_is_replaced_whole_and_synced_with_its_directory(
    tmp_path: Path, synced: list[str]
) -> None:
    """The new bytes replace the old; the file, then its directory, are synced; nothing is left."""
    target = tmp_path / "report.json"
    target.write_bytes(b"old")
    write_atomically(target, b"new " * 100_000)
    assert target.read_bytes() == b"new " * 100_000
    assert synced == ["file", "directory"]
    assert os.listdir(tmp_path) == ["report.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_name_in_an_open_directory_is_written_there(tmp_path: Path, synced: list[str]) -> None:
    """With directory=, the name is inside that directory, the temporary named as asked."""
    directory = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    seen: list[str] = []
    real = os.replace

    def replace(source: str, target: str, **kwargs: int | None) -> None:
        seen.append(source)
        real(source, target, **kwargs)

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(os, "replace", replace)
            write_atomically("entry", b"data", directory=directory, prefix="tmp-", suffix=".part")
    finally:
        os.close(directory)
    assert (tmp_path / "entry").read_bytes() == b"data"
    assert synced == ["file", "directory"]
    [temporary] = seen
    assert temporary.startswith("tmp-")
    assert temporary.endswith(".part")
    assert len(temporary) == len("tmp-") + 16 + len(".part")


def test_the_mode_is_the_one_asked_whatever_the_umask(tmp_path: Path) -> None:
    """mode= is given to the new file exactly: the umask does not narrow it."""
    target = tmp_path / "bench.toml"
    old = os.umask(0o077)
    try:
        write_atomically(target, b"x", mode=0o644)
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_planted_link_is_replaced_never_written_through(tmp_path: Path) -> None:
    """A symbolic link at the target is replaced by the file; what it pointed at is untouched."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "out"
    target.symlink_to(victim)
    write_atomically(target, b"report")
    assert not target.is_symlink()
    assert target.read_bytes() == b"report"
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "full"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_target_as_it_was_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    """A write refused (or interrupted) before the rename: the old file, and nothing else."""
    target = tmp_path / "report.json"
    target.write_bytes(b"old")

    def fsync(fd: int) -> None:
        raise failure

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(type(failure)):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["report.json"]


def test_taken_temporary_names_are_skipped_and_a_full_directory_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temporary name that exists is never reused; when every attempt is taken, FileExistsError."""
    (tmp_path / ".out.0000000000000000.tmp").write_bytes(b"someone else's")
    monkeypatch.setattr(os, "urandom", bytes)
    with pytest.raises(FileExistsError):
        write_atomically(tmp_path / "out", b"data")
    assert (tmp_path / ".out.0000000000000000.tmp").read_bytes() == b"someone else's"
    assert not (tmp_path / "out").exists()


def test_a_directory_that_cannot_be_synced_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EINVAL from syncing the directory (a file system that cannot) is left to the system."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not here")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_atomically(tmp_path / "out", b"data")
    assert (tmp_path / "out").read_bytes() == b"data"
