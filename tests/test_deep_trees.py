"""Trees deeper than the depth bound, through the installed ``grade`` and ``check --rubrics``.

A candidate (or a case's ``expected/``) 1,500 or 5,000 directories deep, or
600 deep with names so long that its paths pass ``PATH_MAX``, used to end
``grade`` in ``internal error: RecursionError`` (the ledger's key hashed the
tree recursively). Each must now be a rubric ``error`` whose reason names
the depth bound, under ``--sandbox none`` and the default sandbox alike,
with no traceback, no temporary directory left, and the tree unchanged.
The trees are built one name at a time from a directory descriptor (no
path that long can be given to the system) and removed the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codegenie.eval import rubrics
from codegenie.eval.rubrics import COPY_DEPTH_LIMIT

from .factory import make_bench, write_case

# The deep trees are built once for the module: its tests share one worker.
pytestmark = pytest.mark.xdist_group("deep-trees")

SLUG = "deep"
CASE = "c1"
DEPTH_REASON = f"the tree is deeper than {COPY_DEPTH_LIMIT} levels"

#: (levels, name of each directory): one-letter names, and names long enough
#: that the paths pass PATH_MAX (4,096 bytes) after 20 levels.
SHAPES = {
    "1500-deep": (1500, "d"),
    "5000-deep": (5000, "d"),
    "beyond-PATH_MAX": (600, "n" * 200),
}
#: ``auto`` is the default: grade and check run as a user would, in bubblewrap.
SANDBOXES = {"default-sandbox": (), "sandbox-none": ("--sandbox", "none")}


def script() -> str:
    """Return the installed console script."""
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


def build_chain(top: Path, levels: int, name: str) -> None:
    """Make ``top/name/…/name/leaf.txt``, ``levels`` directories deep, by descriptors."""
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=here)
            deeper = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = deeper
        leaf = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=here)
        os.write(leaf, b"the bottom\n")
        os.close(leaf)
    finally:
        os.close(here)


def fingerprint(top: Path) -> str:
    """Digest a chain as :func:`build_chain` makes it: each level's names, kinds, modes, mtimes.

    Walked down by descriptors, one held at a time, so depth and path
    length do not matter; only the chain's shape (one directory per level)
    is supported, which is all these tests build.
    """
    digest = hashlib.sha256()
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while True:
            below = []
            for entry in sorted(os.scandir(here), key=lambda e: e.name):
                info = entry.stat(follow_symlinks=False)
                digest.update(f"{entry.name}|{info.st_mode:o}|{info.st_size}|".encode())
                digest.update(f"{info.st_mtime_ns}\n".encode())
                if entry.is_dir(follow_symlinks=False):
                    below.append(entry.name)
            if not below:
                return digest.hexdigest()
            assert len(below) == 1, "fingerprint walks chains only"
            deeper = os.open(below[0], os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = deeper
            digest.update(b"down\n")
    finally:
        os.close(here)


@dataclass
class World:
    """A bench of one task class and one case, candidates beside it, a private TMPDIR."""

    base: Path

    @property
    def case(self) -> Path:
        return self.base / "repo" / "bench" / SLUG / "cases" / CASE

    @property
    def candidates(self) -> Path:
        return self.base / "candidates"

    @property
    def tmp(self) -> Path:
        return self.base / "tmp"

    def build(self) -> None:
        bench = make_bench(self.base / "repo", SLUG, parts=True)
        shutil.rmtree(bench.root / SLUG / "cases")
        write_case(
            bench.root / SLUG / "cases",
            CASE,
            "",
            input_files={"README.txt": "nothing yet\n"},
            expected_files={"answer.txt": "solved\n"},
        )
        (self.candidates / CASE).mkdir(parents=True)
        (self.candidates / CASE / "answer.txt").write_text("solved\n", encoding="utf-8")
        self.tmp.mkdir()

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the console script in the bench's directory, with a private TMPDIR and cache."""
        env = {**os.environ, "TMPDIR": str(self.tmp), "XDG_CACHE_HOME": str(self.base / "cache")}
        return subprocess.run(
            [script(), *args],
            cwd=self.base / "repo",
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


@dataclass
class Deep:
    """The worlds of this module, each built once: its deep trees take seconds to make."""

    factory: pytest.TempPathFactory
    made: dict[tuple[str, str], World]

    def world(self, where: str, shape: str) -> World:
        """Return the world whose ``where`` (candidate, expected) is a chain of ``shape``."""
        key = (where, shape)
        if key not in self.made:
            world = World(self.factory.mktemp(f"{where}-{shape}"))
            world.build()
            top = world.candidates / CASE if where == "candidate" else world.case / "expected"
            (top / "deep").mkdir()
            build_chain(top / "deep", *SHAPES[shape])
            self.made[key] = world
        return self.made[key]


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deep]:
    """Worlds with deep trees, shared by the tests; removed by descriptors at the end."""
    worlds = Deep(tmp_path_factory, {})
    yield worlds
    # pytest's own clean-up of its temporary directories recurses, and fails this deep.
    for world in worlds.made.values():
        for top in (world.candidates / CASE / "deep", world.case / "expected" / "deep"):
            rubrics.remove_tree(str(top))


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A fresh bench and candidate, with no deep tree yet."""
    made = World(tmp_path)
    made.build()
    return made


def assert_clean(done: subprocess.CompletedProcess[str], world: World) -> None:
    """No traceback, no internal error, and nothing left in the run's TMPDIR."""
    assert "internal error" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert list(world.tmp.iterdir()) == []


@pytest.mark.parametrize("sandbox", SANDBOXES.values(), ids=SANDBOXES.keys())
@pytest.mark.parametrize("shape", SHAPES)
def test_grade_of_a_too_deep_candidate_is_an_error_naming_the_depth_bound(
    deep: Deep, shape: str, sandbox: tuple[str, ...]
) -> None:
    """grade of a candidate deeper than the bound: exit 1, an error naming it, no trace left."""
    world = deep.world("candidate", shape)
    candidate = world.candidates / CASE
    before = fingerprint(candidate)
    done = world.run("grade", SLUG, str(world.candidates), "--format", "json", *sandbox)
    assert done.returncode == 1, done.stderr
    (result,) = json.loads(done.stdout)["results"]
    assert result["status"] == "error"
    assert result["reason"] == f"cannot copy {candidate}: {DEPTH_REASON}"
    assert_clean(done, world)
    assert fingerprint(candidate) == before


@pytest.mark.parametrize("sandbox", SANDBOXES.values(), ids=SANDBOXES.keys())
@pytest.mark.parametrize("shape", SHAPES)
def test_check_rubrics_of_a_too_deep_expected_is_a_rubric_error_naming_the_depth_bound(
    deep: Deep, shape: str, sandbox: tuple[str, ...]
) -> None:
    """check --rubrics with an expected/ deeper than the bound: exit 1, located, no trace left."""
    world = deep.world("expected", shape)
    expected = world.case / "expected"
    before = fingerprint(expected)
    done = world.run("check", "--rubrics", *sandbox)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if "error[rubric-error]" in line]
    # expected/ as the golden run's candidate; input/'s run copies the case without it.
    assert len(errors) == 1, done.stdout
    assert f"cannot copy {expected}: {DEPTH_REASON}" in errors[0], errors
    assert_clean(done, world)
    assert fingerprint(expected) == before


def test_a_candidate_exactly_at_the_depth_bound_is_graded(world: World) -> None:
    """grade of a candidate whose deepest file is exactly COPY_DEPTH_LIMIT levels down: passed."""
    candidate = world.candidates / CASE
    (candidate / "deep").mkdir()
    try:
        build_chain(candidate / "deep", COPY_DEPTH_LIMIT - 2, "d")  # deep/d/…/d/leaf.txt
        before = fingerprint(candidate)
        done = world.run("grade", SLUG, str(world.candidates), "--format", "json")
        assert done.returncode == 0, done.stdout + done.stderr
        (result,) = json.loads(done.stdout)["results"]
        assert result["status"] == "passed", result
        assert_clean(done, world)
        assert fingerprint(candidate) == before
    finally:
        rubrics.remove_tree(str(candidate / "deep"))


def test_check_of_a_bench_root_holding_a_too_deep_directory_does_not_crash(world: World) -> None:
    """check's search for registrations walks a 1,500-deep directory beside the packages."""
    data = world.base / "repo" / "bench" / "data"
    data.mkdir()
    try:
        build_chain(data, 1500, "d")
        done = world.run("check")
        assert done.returncode == 0, done.stdout + done.stderr
        assert_clean(done, world)
    finally:
        rubrics.remove_tree(str(data))
