"""Trees sent to a node: packed where they are, made again exactly, and nothing else made.

:func:`pack_tree` and :func:`unpack_tree` carry a run's trees to a node of
a cluster (the Ray executor). A tree made again has the digest of the tree
packed (names, kinds, modes, contents, links); a packed value that no
packing makes — a name that climbs out, an entry under a link, a special
file — is refused before anything is written outside the target.
"""

from __future__ import annotations

import os
import pickle
import socket
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegenie.eval._exec.shipping import TreeNotShipped, pack_tree, unpack_tree
from codegenie.eval._run.digest import tree_digest

_NAMES = st.text(alphabet="abcxyz-_.0", min_size=1, max_size=6).filter(
    lambda n: n not in (".", "..", "__pycache__")
)


@st.composite
def trees(draw: st.DrawFn) -> dict[str, object]:
    """A tree: name to bytes (a file, with a mode), to a dict (a directory), or to a link text."""

    def level(depth: int) -> dict[str, object]:
        names = draw(st.lists(_NAMES, max_size=4, unique=True))
        made: dict[str, object] = {}
        for name in names:
            kind = draw(st.sampled_from(["file", "file", "link", "dir"] if depth < 3 else ["file"]))
            if kind == "file":
                made[name] = (
                    draw(st.binary(max_size=64)),
                    draw(st.sampled_from([0o644, 0o600, 0o755, 0o400])),
                )
            elif kind == "link":
                made[name] = draw(st.sampled_from(["x", "../y", "/etc/passwd", "a/b"]))
            else:
                made[name] = level(depth + 1)
        return made

    return level(0)


def _write(root: Path, tree: dict[str, object]) -> None:
    root.mkdir()
    for name, value in tree.items():
        if isinstance(value, dict):
            _write(root / name, value)
        elif isinstance(value, tuple):
            (root / name).write_bytes(value[0])
            os.chmod(root / name, value[1])
        else:
            os.symlink(str(value), root / name)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tree=trees())
def test_a_tree_made_again_has_the_digest_of_the_tree_packed(
    tmp_path_factory: pytest.TempPathFactory, tree: dict[str, object]
) -> None:
    base = tmp_path_factory.mktemp("ship")
    _write(base / "source", tree)
    unpack_tree(pack_tree(str(base / "source"), caches=True), str(base / "copy"))
    assert tree_digest(base / "copy") == tree_digest(base / "source") is not None


def test_modes_times_and_a_task_class_s_pycache_travel_and_excluded_names_do_not(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source"
    (source / "data" / "__pycache__").mkdir(parents=True)
    (source / "data" / "__pycache__" / "x.pyc").write_bytes(b"junk")
    (source / "cases" / "one").mkdir(parents=True)
    (source / "rubric.py").write_text("print(1)\n")
    os.chmod(source / "rubric.py", 0o750)
    os.utime(source / "rubric.py", ns=(1_000_000_000, 2_000_000_000))
    os.utime(source / "data", ns=(3_000_000_000, 4_000_000_000))
    os.chmod(source / "data", 0o555)
    try:
        packed = pack_tree(str(source), exclude=frozenset({"cases"}), caches=True)
        unpack_tree(packed, str(tmp_path / "copy"))
        copy = tmp_path / "copy"
        assert sorted(p.name for p in copy.iterdir()) == ["data", "rubric.py"]
        # As the task class's mount shows it: __pycache__ too (caches=True).
        assert (copy / "data" / "__pycache__" / "x.pyc").read_bytes() == b"junk"
        assert stat.S_IMODE((copy / "rubric.py").stat().st_mode) == 0o750
        assert stat.S_IMODE((copy / "data").stat().st_mode) == 0o555
        assert (copy / "rubric.py").stat().st_mtime_ns == 2_000_000_000  # as a copy keeps it
        assert (copy / "data").stat().st_mtime_ns == 4_000_000_000
        assert tree_digest(copy) == tree_digest(source, exclude=frozenset({"cases"}))
    finally:
        os.chmod(source / "data", 0o755)
        if (tmp_path / "copy" / "data").exists():
            os.chmod(tmp_path / "copy" / "data", 0o755)


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_special_file_is_refused_as_a_copy_refuses_it(tmp_path: Path, kind: str) -> None:
    source = tmp_path / "source"
    source.mkdir()
    if kind == "fifo":
        os.mkfifo(source / "pipe")
    else:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(source / "pipe"))
    with pytest.raises(TreeNotShipped) as raised:
        pack_tree(str(source))
    assert raised.value.path.endswith("pipe")
    assert "not a regular file" in raised.value.reason


def test_a_tree_beyond_the_bounds_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codegenie.eval import _tree

    source = tmp_path / "source"
    source.mkdir()
    for index in range(5):
        (source / f"f{index}").write_text("x")
    bounds = _tree.TreeBounds(entries=3)
    monkeypatch.setattr(
        "codegenie.eval._exec.shipping.Walk",
        lambda root, skip: _tree.Walk(root, skip=skip, bounds=bounds),
    )
    with pytest.raises(TreeNotShipped) as raised:
        pack_tree(str(source))
    assert "more than 3 entries" in raised.value.reason


def _packed(entries: list[tuple[object, ...]], mode: int = 0o755) -> bytes:
    times = (0, 0)
    with_times = [(*entry, times) if len(entry) == 4 else entry for entry in entries]
    return pickle.dumps(("codegenie-eval tree 2", (mode, times), with_times))


@pytest.mark.parametrize(
    "entries",
    [
        [("f", "../outside", 0o644, b"x")],
        [("f", "/etc/outside", 0o644, b"x")],
        [("f", "a/../../outside", 0o644, b"x")],
        [("f", "", 0o644, b"x")],
        [("f", "a\0b", 0o644, b"x")],
        # through a link: "a" is a link to the parent, "a/outside" would be written there
        [("l", "a", 0, ".."), ("f", "a/outside", 0o644, b"x")],
        # a file under a directory never made
        [("f", "nowhere/outside", 0o644, b"x")],
        [("f", "x", 0o100644, b"x")],  # a file type in the mode
        [("d", "x", 0o755, b"not empty")],
        [("s", "x", 0o644, b"")],  # no such kind
        [("f", "x", 0o644, b"x", (0, 0), "more")],  # another shape
        [("f", "x", 0o644, b"x", (0.5, 0))],  # times that are not nanoseconds
        [("f", "x", 0o644, b"1"), ("f", "x", 0o644, b"2")],  # twice
    ],
)
def test_a_value_no_packing_makes_is_refused_and_nothing_is_written_outside(
    tmp_path: Path, entries: list[tuple[object, ...]]
) -> None:
    target = tmp_path / "inner" / "copy"
    (tmp_path / "inner").mkdir()
    with pytest.raises(TreeNotShipped):
        unpack_tree(_packed(entries), str(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inner"]
    assert not (tmp_path / "inner" / "outside").exists()


@pytest.mark.parametrize(
    "data", [b"", b"not a pickle", pickle.dumps(("another format", 0o755, []))]
)
def test_a_value_that_is_not_a_packed_tree_is_refused(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(TreeNotShipped):
        unpack_tree(data, str(tmp_path / "copy"))


def test_a_case_or_candidate_leaves_pycache_home_as_a_copy_does(tmp_path: Path) -> None:
    """No run reads what its key does not cover: __pycache__ is neither keyed nor sent."""
    source = tmp_path / "source"
    (source / "pkg" / "__pycache__").mkdir(parents=True)
    (source / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"forged")
    (source / "pkg" / "m.py").write_text("VALUE = 1\n")
    unpack_tree(pack_tree(str(source)), str(tmp_path / "copy"))
    assert sorted(p.name for p in (tmp_path / "copy" / "pkg").iterdir()) == ["m.py"]
    assert tree_digest(tmp_path / "copy") == tree_digest(source)


def test_a_shell_rubric_s_spec_travels_and_runs_on_a_node(tmp_path: Path) -> None:
    """A spec with a declared command pickles with its trees and is made, as a node makes it."""
    from codegenie.eval._command import RubricCommand
    from codegenie.eval._exec.node import Shipped, result_from_node, run_shipped
    from codegenie.eval._run.spec import RunSpec
    from codegenie.eval.cases import Case

    task_class = tmp_path / "tc"
    (task_class / "cases" / "one" / "input").mkdir(parents=True)
    (task_class / "cases" / "one" / "expected").mkdir()
    (task_class / "cases" / "one" / "case.toml").write_text("")
    (task_class / "rubric.sh").write_text(
        'test -f "$2/answer.txt" && { echo \'{"passed": true, "reason": "sh"}\'; exit 0; }\n'
        "echo '{\"passed\": false}'; exit 1\n"
    )
    (tmp_path / "candidate").mkdir()
    (tmp_path / "candidate" / "answer.txt").write_text("42\n")
    case = Case(task_class="t", id="one", directory=task_class / "cases" / "one")
    command = RubricCommand(("sh", "{rubric}", "{case}", "{candidate}"))
    spec = RunSpec.of(
        task_class / "rubric.sh", case, tmp_path / "candidate", sandbox="none/2", command=command
    ).read()
    shipped = Shipped(
        pack_tree(str(task_class), exclude=frozenset({"cases"}), caches=True),
        pack_tree(spec.case.path),
        pack_tree(spec.candidate.path),
    )
    there, parcel = pickle.loads(pickle.dumps((spec, shipped)))
    assert (there, there.key()) == (spec, spec.key())
    result = result_from_node(run_shipped(there, "none", parcel, "node-1"))
    assert (result.status, result.reason, result.node) == ("passed", "sh", "node-1")
