"""The one walker of trees someone else made: order, bounds, links, special files, descriptors."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegenie.eval import rubrics
from codegenie.eval._run.digest import tree_digest
from codegenie.eval._tree import (
    DEPTH_LIMIT,
    HELD,
    Descent,
    TreeBeyondBounds,
    TreeBounds,
    Walk,
    special_kind,
)

# -- a simple reference: recursive, by paths, exactly the documented digest ---------------


def reference_digest(root: str, exclude: frozenset[str] = frozenset()) -> str:
    """The ledger's tree digest as its docstring describes it, written the obvious way."""
    digest = hashlib.blake2b(digest_size=32)

    def visit(path: str, relative: str) -> None:
        for name in sorted(os.listdir(path)):
            if name == "__pycache__" or (not relative and name in exclude):
                continue
            full, shown = os.path.join(path, name), f"{relative}/{name}" if relative else name
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                digest.update(f"l {shown!r} {os.readlink(full)!r}\n".encode())
            elif stat.S_ISDIR(info.st_mode):
                digest.update(f"d {shown!r}\n".encode())
                visit(full, shown)
            elif stat.S_ISREG(info.st_mode):
                with open(full, "rb") as file:
                    content = file.read()
                executable = "x" if info.st_mode & 0o111 else "-"
                digest.update(f"f {shown!r} {executable} {len(content)}\n".encode())
                digest.update(content + b"\n")
            else:
                digest.update(f"s {shown!r} {stat.S_IFMT(info.st_mode)}\n".encode())

    visit(root, "")
    return digest.hexdigest()


def reference_order(root: str) -> list[str]:
    """Every entry's relative path, depth first, each directory's entries sorted by name."""
    found: list[str] = []

    def visit(path: str, relative: str) -> None:
        for name in sorted(os.listdir(path)):
            shown = f"{relative}/{name}" if relative else name
            found.append(shown)
            if os.path.isdir(os.path.join(path, name)) and not os.path.islink(
                os.path.join(path, name)
            ):
                visit(os.path.join(path, name), shown)

    visit(root, "")
    return found


NAMES = st.sampled_from(["a", "b", "B", "é", "a b", "__pycache__", "z.txt", "-", "x" * 40])
LEAVES = st.one_of(
    st.tuples(st.just("file"), st.binary(max_size=64), st.booleans()),
    st.tuples(st.just("link"), st.sampled_from(["a", "../a", "/etc/passwd", "nowhere", "."])),
    st.tuples(st.just("fifo")),
)
TREES = st.recursive(
    st.dictionaries(NAMES, LEAVES, max_size=4),
    lambda children: st.dictionaries(NAMES, st.one_of(LEAVES, children), max_size=4),
    max_leaves=12,
)


def make(root: Path, tree: dict[str, Any]) -> None:
    """Build ``tree`` (name -> a subtree, or a leaf: file, link or FIFO) under ``root``."""
    for name, node in tree.items():
        path = root / name
        if isinstance(node, dict):
            path.mkdir()
            make(path, node)
        elif node[0] == "file":
            path.write_bytes(node[1])
            path.chmod(0o755 if node[2] else 0o644)
        elif node[0] == "link":
            path.symlink_to(node[1])
        else:
            os.mkfifo(path)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=TREES, exclude=st.frozensets(NAMES, max_size=2))
def test_the_walks_digest_is_the_simple_references(
    tmp_path: Path, tree: dict[str, Any], exclude: frozenset[str]
) -> None:
    """On any small tree (files, links, FIFOs, __pycache__), the digest and order are the reference's."""
    with tempfile.TemporaryDirectory(dir=tmp_path) as top:
        make(Path(top), tree)
        assert tree_digest(top, exclude=exclude) == reference_digest(top, exclude)
        with Walk(top) as walk:
            assert [entry.relative for entry in walk] == reference_order(top)


# -- the bounds ------------------------------------------------------------------------


def chain(top: Path, levels: int, name: str = "d") -> None:
    """Make ``top/name/…/name/leaf``, ``levels`` directories deep, by descriptors."""
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=here)
            deeper = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = deeper
        leaf = os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=here)
        os.write(leaf, b"bottom")
        os.close(leaf)
    finally:
        os.close(here)


def test_the_bounds_say_what_was_crossed_in_words() -> None:
    """The default bounds' reasons: 100,000 entries, 1 GiB, 512 levels."""
    bounds = TreeBounds()
    assert bounds.too_many_entries() == "the tree has more than 100,000 entries"
    assert bounds.too_many_bytes() == "the tree holds more than 1 GiB"
    assert bounds.too_deep() == "the tree is deeper than 512 levels"
    assert DEPTH_LIMIT == bounds.depth == 512
    assert TreeBounds(bytes=1000).too_many_bytes() == "the tree holds more than 1,000 bytes"


def test_a_tree_exactly_at_the_depth_bound_is_walked_one_level_deeper_is_not(
    tmp_path: Path,
) -> None:
    """A leaf DEPTH_LIMIT levels down is walked whole; one more level is TreeBeyondBounds at the top."""
    top = tmp_path / "tree"
    top.mkdir()
    chain(top, DEPTH_LIMIT - 1)
    try:
        with Walk(top) as walk:
            depths = [entry.depth for entry in walk]
        assert max(depths) == DEPTH_LIMIT
        assert len(depths) == DEPTH_LIMIT
        assert tree_digest(top) is not None
        (top / "d" / "e").mkdir()
        chain(top / "d" / "e", DEPTH_LIMIT - 1)  # d/e/d/…/d/leaf: 513 levels
        with pytest.raises(TreeBeyondBounds) as raised:
            list(Walk(top))
        assert (raised.value.path, raised.value.reason) == (str(top), TreeBounds().too_deep())
        assert tree_digest(top) is None
    finally:
        rubrics.remove_tree(str(top))


def read_every_file(walk: Walk, read: list[bytes]) -> None:
    """Read every file of ``walk`` into ``read``, a chunk at a time."""
    for entry in walk:
        with entry.open() as file:
            read += file.chunks()


def test_the_entries_and_bytes_bounds_name_the_entry_that_crossed_them(tmp_path: Path) -> None:
    """More entries or bytes than the bounds: the entry that crossed them, and which bound."""
    for name in ("a", "b", "c", "d"):
        (tmp_path / name).write_bytes(b"12345")
    with pytest.raises(TreeBeyondBounds) as raised:
        list(Walk(tmp_path, bounds=TreeBounds(entries=3)))
    assert (raised.value.path, raised.value.reason) == (
        str(tmp_path / "d"),
        "the tree has more than 3 entries",
    )
    read: list[bytes] = []
    with pytest.raises(TreeBeyondBounds) as raised:
        read_every_file(Walk(tmp_path, bounds=TreeBounds(bytes=12)), read)
    assert (raised.value.path, raised.value.reason) == (
        str(tmp_path / "c"),
        "the tree holds more than 12 bytes",
    )
    assert read == [b"12345", b"12345"]  # the third is refused on its size, before it is read


def test_skipped_entries_are_neither_yielded_counted_nor_entered(tmp_path: Path) -> None:
    """skip leaves an entry out entirely: a skipped directory's content does not count either."""
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "x").write_text("x")
    (tmp_path / "skipped").mkdir()
    for n in range(10):
        (tmp_path / "skipped" / str(n)).write_text("x")
    walk = Walk(tmp_path, bounds=TreeBounds(entries=2), skip=lambda e: e.name == "skipped")
    assert [entry.relative for entry in walk] == ["kept", "kept/x"]


# -- links, special files, descriptors ------------------------------------------------


def test_links_are_reported_never_followed_and_special_files_never_opened(tmp_path: Path) -> None:
    """A link to a directory is not entered; a FIFO is "special" and reading the tree never blocks."""
    top = tmp_path / "tree"
    top.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("secret")
    (top / "out").symlink_to(tmp_path / "outside")
    os.mkfifo(top / "pipe")
    with Walk(top) as walk:
        seen = [
            (entry.relative, entry.kind, entry.kind == "link" and entry.readlink())
            for entry in walk
        ]
    assert seen == [("out", "link", str(tmp_path / "outside")), ("pipe", "special", False)]
    assert special_kind((top / "pipe").lstat().st_mode) == "a FIFO (named pipe)"
    assert tree_digest(top) is not None


def test_a_file_swapped_for_a_fifo_is_opened_without_blocking_and_seen_as_one(
    tmp_path: Path,
) -> None:
    """Listed as a file, a FIFO by the time it is opened: O_NONBLOCK, and fstat says it is not regular."""
    (tmp_path / "file").write_text("data")
    with Walk(tmp_path) as walk:
        for entry in walk:
            (tmp_path / "file").unlink()
            os.mkfifo(tmp_path / "file")
            with entry.open() as opened:
                assert not opened.regular
                assert stat.S_ISFIFO(opened.status.st_mode)
                assert list(opened.chunks()) == []


def test_a_link_swapped_in_for_a_file_is_not_followed(tmp_path: Path) -> None:
    """Listed as a file, a link by the time it is opened: O_NOFOLLOW refuses it (ELOOP)."""
    (tmp_path / "file").write_text("data")
    (tmp_path / "elsewhere").write_text("secret")
    with Walk(tmp_path, skip=lambda e: e.name == "elsewhere") as walk:
        for entry in walk:
            (tmp_path / "file").unlink()
            (tmp_path / "file").symlink_to(tmp_path / "elsewhere")
            with pytest.raises(OSError, match="symbolic links") as raised:
                entry.open()
            assert raised.value.errno == errno.ELOOP


def test_a_top_that_is_a_link_is_followed_only_when_asked(tmp_path: Path) -> None:
    """follow=False refuses a top that is a link (a candidate's must be its own directory)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x").write_text("x")
    (tmp_path / "link").symlink_to("real")
    assert [entry.name for entry in Walk(tmp_path / "link")] == ["x"]
    with pytest.raises(OSError, match=r"Not a directory|symbolic links") as raised:
        Walk(tmp_path / "link", follow=False)
    assert raised.value.errno in (errno.ELOOP, errno.ENOTDIR)  # O_NOFOLLOW | O_DIRECTORY


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_tree_longer_than_path_max_is_walked_holding_a_few_descriptors(tmp_path: Path) -> None:
    """600 levels of 200-character names (paths of 120 KB): walked whole, never over HELD + 2 fds."""
    top = tmp_path / "long"
    top.mkdir()
    chain(top, 600, "n" * 200)
    try:
        before, most, deepest = open_descriptors(), 0, ""
        with Walk(top, bounds=TreeBounds(depth=1000)) as walk:
            for entry in walk:
                most = max(most, open_descriptors() - before)
                if entry.kind == "file":
                    with entry.open() as file:
                        most = max(most, open_descriptors() - before)
                        assert b"".join(file.chunks()) == b"bottom"
                    deepest = entry.relative
        assert len(deepest) > 120_000 > os.pathconf("/", "PC_PATH_MAX")
        assert most <= HELD + 1  # the directories held, and the file
        assert open_descriptors() == before
        with pytest.raises(TreeBeyondBounds, match="deeper than 512 levels"):
            list(Walk(top))
        assert open_descriptors() == before
    finally:
        rubrics.remove_tree(str(top))


def test_an_entry_is_usable_only_while_the_walk_is_on_it(tmp_path: Path) -> None:
    """Its descriptor-relative methods refuse once the walk has moved on (the descriptor may be gone)."""
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    entries = list(Walk(tmp_path))
    with pytest.raises(RuntimeError, match="moved on"):
        entries[0].lstat()


def test_a_descent_that_finds_its_tree_changed_says_so(tmp_path: Path) -> None:
    """A directory let go of and moved meanwhile is not taken for another: OSError(ESTALE)."""
    (tmp_path / "a" / "b" / "c" / "d" / "e").mkdir(parents=True)
    with Descent(str(tmp_path)) as descent:
        for name in "abcde":
            descent.enter(name)
        assert descent.depth == 5
        (tmp_path / "a" / "b" / "c").rename(tmp_path / "c-moved")  # c's ".." is no longer b
        (tmp_path / "a" / "b").rename(tmp_path / "b-moved")
        (tmp_path / "a" / "b").mkdir()  # and the name b is another directory now
        descent.leave()
        descent.leave()
        with pytest.raises(OSError, match="changed while it was read") as raised:
            descent.leave()
        assert raised.value.errno == errno.ESTALE


def test_a_descent_climbs_back_through_directories_it_let_go_of(tmp_path: Path) -> None:
    """Down 10 levels and back: each level it let go of is opened again, and is the same."""
    chain(tmp_path, 10)
    with Descent(str(tmp_path)) as descent:
        identities = [os.fstat(descent.fd()).st_ino]
        for _ in range(10):
            descent.enter("d")
            identities.append(os.fstat(descent.fd()).st_ino)
        climbed = [os.fstat(descent.fd()).st_ino]
        for _ in range(10):
            descent.leave()
            climbed.append(os.fstat(descent.fd()).st_ino)
    assert climbed == identities[::-1]


# -- every walker is this one: the removal and the disk watch too ------------------------


def test_leave_is_called_for_each_directory_after_its_entries_from_the_one_above(
    tmp_path: Path,
) -> None:
    """A post-order event: each directory once, after all it holds, its entry still usable."""
    for name in ("a/b/c.txt", "a/d.txt", "e/f.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    events: list[str] = []

    def left(entry: Any) -> None:
        events.append(f"leave {entry.relative} {stat.S_ISDIR(entry.lstat().st_mode)}")

    with Walk(tmp_path, leave=left) as walk:
        for entry in walk:
            events.append(f"see {entry.relative}")
    assert events == [
        "see a",
        "see a/b",
        "see a/b/c.txt",
        "leave a/b True",
        "see a/d.txt",
        "leave a True",
        "see e",
        "see e/f.txt",
        "leave e True",
    ]


def test_a_removal_walk_removes_what_a_rubric_locked_and_follows_no_link(tmp_path: Path) -> None:
    """Directories without permissions, read-only files, links out: all gone, the target kept."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    run = tmp_path / "run"
    (run / "locked" / "deeper").mkdir(parents=True)
    (run / "locked" / "deeper" / "file").write_text("x")
    (run / "locked" / "ro.txt").write_text("x")
    (run / "locked" / "ro.txt").chmod(0o400)
    (run / "out").symlink_to(outside)
    os.mkfifo(run / "pipe")
    (run / "locked" / "deeper").chmod(0)
    (run / "locked").chmod(0o500)
    rubrics.remove_tree(str(run))
    assert not run.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_a_removal_of_a_tree_deeper_than_every_bound_leaves_nothing(tmp_path: Path) -> None:
    top = tmp_path / "deep"
    top.mkdir()
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(DEPTH_LIMIT + 200):
            os.mkdir("d" * 50, dir_fd=here)
            deeper = os.open("d" * 50, os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = deeper
    finally:
        os.close(here)
    rubrics.remove_tree(str(top))
    assert not top.exists()


def test_the_disk_watch_measures_through_the_walk_whatever_the_depth(tmp_path: Path) -> None:
    """The footprint counts every entry below the depth bound of reading walks, and stops early."""
    from codegenie.eval._sandbox.disk import measure

    here = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(DEPTH_LIMIT + 10):
            os.mkdir("d", dir_fd=here)
            deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = deeper
    finally:
        os.close(here)
    whole = measure(str(tmp_path))
    assert (whole.entries, whole.complete) == (DEPTH_LIMIT + 10, True)
    cut = measure(str(tmp_path), most_entries=100)
    assert cut.entries > 100
    assert not cut.complete
    rubrics.remove_tree(str(tmp_path / "d"))
