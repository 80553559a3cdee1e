"""The validation ledger's key and store: what a run depends on, and results kept by it."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegenie.eval._ledger.reuse import Ledger, LedgerSummary
from codegenie.eval._ledger.store import DIRECTORY, ResultStore
from codegenie.eval._run.digest import tree_digest
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._tree import DEPTH_LIMIT
from codegenie.eval.cases import Case
from codegenie.eval.rubrics import remove_tree


def build(root: Path, files: dict[str, bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def task_class(root: Path) -> Path:
    """A task-class directory: registration, rubric, a data file beside them, two cases."""
    build(
        root / "tc",
        {
            "registration.py": b"# registration\n",
            "rubric.py": b"print('{}')\n",
            "data/table.csv": b"a,b\n",
            "cases/one/case.toml": b"timeout = 5\n",
            "cases/one/input/x.txt": b"in\n",
            "cases/one/expected/x.txt": b"out\n",
            "cases/two/case.toml": b"",
            "cases/two/input/y.txt": b"in\n",
            "cases/two/expected/y.txt": b"out\n",
        },
    )
    return root / "tc"


def spec_of(tc: Path, case: str = "one", side: str = "expected") -> RunSpec:
    """The spec of running ``tc``'s rubric on ``case``'s ``side``, its trees not yet read."""
    case_dir = tc / "cases" / case
    the_case = Case(task_class="t", id=case, directory=case_dir, timeout=5)
    return RunSpec.of(tc / "rubric.py", the_case, case_dir / side, sandbox="bwrap/2")


def key_of(tc: Path, case: str = "one", side: str = "expected", **changes: Any) -> str:
    """The key of :func:`spec_of`'s run, read, with ``changes`` made to the spec."""
    key = dataclasses.replace(spec_of(tc, case, side), **changes).read().key()
    assert key is not None
    return key


IN_KEY = ["registration.py", "rubric.py", "data/table.csv", "cases/one/case.toml",
          "cases/one/input/x.txt", "cases/one/expected/x.txt"]  # fmt: skip
OUTSIDE_KEY = ["cases/two/case.toml", "cases/two/input/y.txt", "cases/two/expected/y.txt"]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(IN_KEY), extra=st.binary(min_size=1, max_size=8))
def test_any_edit_to_a_file_in_the_key_changes_it(
    tmp_path_factory: pytest.TempPathFactory, name: str, extra: bytes
) -> None:
    """Appending any bytes to any file the run reads gives another key."""
    tc = task_class(tmp_path_factory.mktemp("bench"))
    before = key_of(tc)
    with (tc / name).open("ab") as handle:
        handle.write(extra)
    assert key_of(tc) != before


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(OUTSIDE_KEY), extra=st.binary(min_size=1, max_size=8))
def test_an_edit_elsewhere_keeps_the_key(
    tmp_path_factory: pytest.TempPathFactory, name: str, extra: bytes
) -> None:
    """Another case's files, a manifest beside the bench and __pycache__ are not in the key."""
    base = tmp_path_factory.mktemp("bench")
    tc = task_class(base)
    before = key_of(tc)
    with (tc / name).open("ab") as handle:
        handle.write(extra)
    (base / "bench.toml").write_bytes(b"# a comment\n" + extra)
    (tc / "__pycache__").mkdir(exist_ok=True)
    (tc / "__pycache__" / "registration.cpython-311.pyc").write_bytes(extra)
    assert key_of(tc) == before


@pytest.mark.parametrize(
    "change",
    ["rename", "chmod", "link", "new-file", "empty-dir", "limits", "sandbox", "side"],
)
def test_every_kind_of_change_changes_the_key(tmp_path: Path, change: str) -> None:
    """Names, the executable bit, link targets, new entries, limits, sandbox and side count."""
    tc = task_class(tmp_path)
    before = key_of(tc)
    expected = tc / "cases" / "one" / "expected"
    after = None
    if change == "rename":
        (expected / "x.txt").rename(expected / "z.txt")
    elif change == "chmod":
        (tc / "rubric.py").chmod(0o755)
    elif change == "link":
        (expected / "link").symlink_to("x.txt")
        before = key_of(tc)
        (expected / "link").unlink()
        (expected / "link").symlink_to("elsewhere")
    elif change == "new-file":
        (tc / "notes.txt").write_text("new\n")
    elif change == "empty-dir":
        (expected / "sub").mkdir()
    elif change == "side":
        after = key_of(tc, side="input")
    elif change == "limits":
        after = key_of(tc, timeout=61.0)
    else:
        after = key_of(tc, sandbox="none/2")
    assert (after or key_of(tc)) != before


def test_a_tree_that_cannot_be_read_has_no_digest(tmp_path: Path) -> None:
    """A missing tree, or one beyond the bounds, has no digest: its runs are never stored."""
    assert tree_digest(tmp_path / "missing") is None
    (tmp_path / "fifo-tree").mkdir()
    os.mkfifo(tmp_path / "fifo-tree" / "pipe")
    assert tree_digest(tmp_path / "fifo-tree") is not None  # a FIFO is hashed as its kind


def chain(top: Path, levels: int) -> None:
    """Make ``top/d/…/d/leaf``, ``levels`` directories deep, by descriptors."""
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=here)
            deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = deeper
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=here))
    finally:
        os.close(here)


@pytest.mark.parametrize(("levels", "keyed"), [(DEPTH_LIMIT - 1, True), (1500, False)])
def test_a_candidate_deeper_than_the_depth_bound_has_no_key(
    tmp_path: Path, levels: int, keyed: bool
) -> None:
    """A candidate 1,500 levels deep has no key (never stored, never a crash); one at the bound has."""
    tc = task_class(tmp_path)
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    chain(candidate, levels)  # its leaf is levels + 1 down
    try:
        case = Case(task_class="t", id="one", directory=tc / "cases" / "one", timeout=5)
        spec = RunSpec.of(tc / "rubric.py", case, candidate, sandbox="none/2")
        with Ledger.open(enabled=True) as ledger:
            assert ledger.enabled
            key = ledger.key(spec)
        assert (key is not None) == keyed
        assert (tree_digest(candidate) is not None) == keyed
    finally:  # pytest's own clean-up of tmp_path recurses, and fails this deep
        remove_tree(str(candidate))


def test_the_store_round_trips(tmp_path: Path) -> None:
    """What put stores, get returns (from another open store too); another key is a miss."""
    key = "a" * 64
    with opened() as store:
        assert store.get(key) is None
        store.put(key, {"status": "passed", "score": 1.0})
    with opened() as again:
        assert again.get(key) == {"status": "passed", "score": 1.0}
        assert again.get("b" * 64) is None


def opened() -> ResultStore:
    store = ResultStore.open()
    assert store is not None, "the result store can be used here"
    return store


def results_dir() -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "codegenie-eval" / DIRECTORY


@pytest.mark.parametrize("damage", ["truncate", "flip-payload", "flip-signature", "swap", "link"])
def test_a_damaged_or_forged_entry_is_a_miss(tmp_path: Path, damage: str) -> None:
    """An entry cut short, edited, moved under another key or replaced by a link is never served."""
    key, other = "c" * 64, "d" * 64
    with opened() as store:
        store.put(key, {"status": "failed"})
        store.put(other, {"status": "passed"})
    entry = results_dir() / f"{key}.result"
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[:-3])
    elif damage == "flip-payload":
        entry.write_bytes(data.replace(b"failed", b"passed"))
    elif damage == "flip-signature":
        lines = data.split(b"\n", 3)
        lines[2] = bytes(reversed(lines[2]))
        entry.write_bytes(b"\n".join(lines))
    elif damage == "swap":
        entry.write_bytes((results_dir() / f"{other}.result").read_bytes())
    else:
        target = tmp_path / "planted"
        target.write_bytes(data)
        entry.unlink()
        entry.symlink_to(target)
    with opened() as store:
        assert store.get(key) is None


def test_a_store_others_can_write_to_is_not_used(tmp_path: Path) -> None:
    """A results directory writable by others is neither read nor written."""
    with opened() as store:
        store.put("e" * 64, {"status": "passed"})
    results_dir().chmod(0o777)
    try:
        assert ResultStore.open() is None
    finally:
        results_dir().chmod(0o700)


# -- reuse through the command line --------------------------------------------------

COUNTING_RUBRIC = """\
import json, os, sys
from pathlib import Path

with open(os.environ["RUBRIC_RUNS"], "a") as runs:  # outside the bench: --sandbox none
    runs.write(Path(sys.argv[1]).name + "\\n")
answer = (Path(sys.argv[2]) / "answer.txt").read_text().strip()
passed = answer == "solved"
print(json.dumps({"passed": passed, "reason": answer}))
sys.exit(0 if passed else 1)
"""


def counting_bench(base: Path) -> tuple[Path, Path]:
    """A bench whose rubric appends each run's case id to $RUBRIC_RUNS; two cases, candidates."""
    from .factory import make_bench, write_case

    bench = make_bench(base / "repo", "counted", parts=True)
    package = bench.root / "counted"
    (package / "rubric.py").write_text(COUNTING_RUBRIC, encoding="utf-8")
    shutil.rmtree(package / "cases")
    for case_id in ("one", "two"):
        write_case(package / "cases", case_id, "", input_files={"answer.txt": "todo\n"},
                   expected_files={"answer.txt": "solved\n"})  # fmt: skip
        candidate = base / "repo" / "runs" / case_id
        candidate.mkdir(parents=True)
        (candidate / "answer.txt").write_text("solved\n")
    return bench.base, base / "runs.log"


def bench_cli(cwd: Path, log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    env = {**os.environ, "RUBRIC_RUNS": str(log)}
    return subprocess.run(
        [script, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def runs_made(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_grade_twice_runs_no_rubric_the_second_time(tmp_path: Path) -> None:
    """Regrading unchanged candidates is answered from the store: same output, no rubric run."""
    repo, log = counting_bench(tmp_path)
    first = bench_cli(
        repo, log, "--format", "json", "grade", "counted", "runs", "--sandbox", "none"
    )
    assert first.returncode == 0, first.stderr
    assert sorted(runs_made(log)) == ["one", "two"]
    second = bench_cli(
        repo, log, "--format", "json", "grade", "counted", "runs", "--sandbox", "none"
    )
    assert second.returncode == 0
    assert sorted(runs_made(log)) == ["one", "two"]  # nothing ran again
    before, after = json.loads(first.stdout), json.loads(second.stdout)
    assert (before["reused"], after["reused"]) == (0, 2)
    assert [r["status"] for r in before["results"]] == [r["status"] for r in after["results"]]


def test_an_edited_candidate_is_graded_again_and_no_cache_runs_everything(tmp_path: Path) -> None:
    """Editing one candidate re-runs that case only; --no-cache runs every rubric."""
    repo, log = counting_bench(tmp_path)
    assert bench_cli(repo, log, "grade", "counted", "runs", "--sandbox", "none").returncode == 0
    (repo / "runs" / "two" / "answer.txt").write_text("wrong\n")
    edited = bench_cli(repo, log, "grade", "counted", "runs", "--sandbox", "none")
    assert edited.returncode == 1
    assert sorted(runs_made(log)) == ["one", "two", "two"]
    assert "1 result reused" in edited.stderr
    forced = bench_cli(repo, log, "--no-cache", "grade", "counted", "runs", "--sandbox", "none")
    assert forced.returncode == 1
    assert sorted(runs_made(log)) == ["one", "one", "two", "two", "two"]
    assert "reused" not in forced.stderr


def test_the_store_does_not_change_the_output(tmp_path: Path) -> None:
    """Text output is the same from the store as from running the rubrics (times aside)."""
    import re

    repo, log = counting_bench(tmp_path)
    ran = bench_cli(repo, log, "grade", "counted", "runs", "--sandbox", "none")
    stored = bench_cli(repo, log, "grade", "counted", "runs", "--sandbox", "none")
    times = re.compile(r"\d+\.\d\ds\b")
    assert times.sub("T", ran.stdout) == times.sub("T", stored.stdout)


# -- what the copies carry, against what the key covers ----------------------------

PROBING_RUBRIC = """\
import json, os, stat, sys
from pathlib import Path

probe = (Path(__file__).parent / "probe.txt").read_text().strip()
candidate = Path(sys.argv[2])
answer = candidate / "answer.txt"
if probe == "mode":  # the harness may be root, who reads a file of mode 0000: look at the mode
    seen = stat.S_IMODE(answer.stat().st_mode) & 0o444 != 0
elif probe == "mtime":  # as make decides: the output is no older than its source
    seen = (candidate / "out.txt").stat().st_mtime_ns >= answer.stat().st_mtime_ns
elif probe == "owner":
    seen = (answer.stat().st_uid, answer.stat().st_gid) == (os.getuid(), os.getgid())
elif probe == "xattr":
    seen = os.listxattr(answer) == []
elif probe == "link":
    seen = os.readlink(candidate / "link") == "answer.txt"
elif probe == "empty-dir":
    seen = not (candidate / "extra").exists()
elif probe == "dir-mode":
    seen = stat.S_IMODE((candidate / "sub").stat().st_mode) == 0o755
elif probe == "top-mode":
    seen = stat.S_IMODE(candidate.stat().st_mode) == 0o755
else:
    raise SystemExit(f"unknown probe {probe}")
print(json.dumps({"passed": seen, "reason": probe}))
sys.exit(0 if seen else 1)
"""


def probing_bench(base: Path, probe: str) -> tuple[Path, Path]:
    """A bench whose one case's rubric passes when its candidate's copy looks as ``probe`` wants."""
    from .factory import make_bench, write_case

    bench = make_bench(base / "repo", "probed", parts=True)
    package = bench.root / "probed"
    (package / "rubric.py").write_text(PROBING_RUBRIC, encoding="utf-8")
    (package / "probe.txt").write_text(probe + "\n", encoding="utf-8")
    shutil.rmtree(package / "cases")
    write_case(package / "cases", "one", "", input_files={"answer.txt": "todo\n"},
               expected_files={"answer.txt": "solved\n"})  # fmt: skip
    candidate = base / "repo" / "runs" / "one"
    (candidate / "sub").mkdir(parents=True)
    (candidate / "sub").chmod(0o755)
    candidate.chmod(0o755)
    (candidate / "answer.txt").write_text("solved\n")
    (candidate / "answer.txt").chmod(0o644)
    (candidate / "out.txt").write_text("built\n")
    (candidate / "link").symlink_to("answer.txt")
    os.utime(candidate / "answer.txt", ns=(1_000_000_000, 1_000_000_000))
    os.utime(candidate / "out.txt", ns=(2_000_000_000, 2_000_000_000))
    return bench.base, candidate


def _change_owner(candidate: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(candidate / "answer.txt", 4242, 4242)


def _add_xattr(candidate: Path) -> None:
    try:
        os.setxattr(candidate / "answer.txt", "user.origin", b"model-b")
    except OSError as exc:
        pytest.skip(f"this file system refuses user.* extended attributes: {exc.strerror}")


def _relink(candidate: Path) -> None:
    (candidate / "link").unlink()
    (candidate / "link").symlink_to("out.txt")


#: Each neighbour of the stored candidate: identical bytes, one other thing a copy could carry.
NEIGHBOURS: dict[str, Any] = {
    "mode": lambda c: (c / "answer.txt").chmod(0),
    "mtime": lambda c: os.utime(c / "out.txt", ns=(0, 0)),
    "owner": _change_owner,
    "xattr": _add_xattr,
    "link": _relink,
    "empty-dir": lambda c: (c / "extra").mkdir(),
    "dir-mode": lambda c: (c / "sub").chmod(0o700),
    "top-mode": lambda c: c.chmod(0o700),
}
#: The neighbours that are another run (the key covers what differs): the rest are the same run.
KEYED = frozenset({"link", "empty-dir"})


def grade_json(repo: Path, *args: str) -> dict[str, Any]:
    done = bench_cli(
        repo, repo / "unused.log", "--format", "json", *args,
        "grade", "probed", "runs", "--sandbox", "none",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@pytest.mark.parametrize("neighbour", sorted(NEIGHBOURS))
def test_the_ledger_answers_a_neighbour_as_no_cache_does(tmp_path: Path, neighbour: str) -> None:
    """A candidate with the stored one's bytes but another mode, time, owner, xattr, link or
    directory gets from the ledger exactly what --no-cache gives it."""
    repo, candidate = probing_bench(tmp_path, neighbour)
    stored = grade_json(repo)
    assert (stored["results"][0]["status"], stored["reused"]) == ("passed", 0)
    NEIGHBOURS[neighbour](candidate)
    served = grade_json(repo)
    fresh = grade_json(repo, "--no-cache")
    assert served["results"][0]["status"] == fresh["results"][0]["status"]
    if neighbour in KEYED:  # another run: made again, and it sees the difference
        assert (served["reused"], served["results"][0]["status"]) == (0, "failed")
    else:  # the same run: no copy carries the difference, so the stored verdict is its verdict
        assert (served["reused"], served["results"][0]["status"]) == (1, "passed")


def test_the_name_the_candidates_copy_keeps_is_in_the_key(tmp_path: Path) -> None:
    """CANDIDATE_DIR keeps its directory's name, which a rubric can read: the key covers it."""
    tc = task_class(tmp_path)
    case_dir = tc / "cases" / "one"
    case = Case(task_class="t", id="one", directory=case_dir, timeout=5)
    for where in ("a/s1", "b/s1", "a/s2"):
        build(tmp_path / where, {"x.txt": b"same\n"})

    def key(where: str) -> str | None:
        return RunSpec.of(tc / "rubric.py", case, tmp_path / where, sandbox="none/2").read().key()

    assert key("a/s1") == key("b/s1") != key("a/s2")


# -- the interpreter's packages ------------------------------------------------------

IMPORTING_RUBRIC = """\
import json, sys
from pathlib import Path

import helper_mod  # an editable install's module

answer = (Path(sys.argv[2]) / "answer.txt").read_text().strip()
passed = answer == helper_mod.ANSWER
print(json.dumps({"passed": passed, "reason": f"wants {helper_mod.ANSWER}"}))
sys.exit(0 if passed else 1)
"""


@dataclasses.dataclass(frozen=True)
class Harness:
    """A virtual environment of its own running this package, with one editable source."""

    script: Path
    site: Path
    source: Path

    def run(self, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.script), *args], cwd=cwd, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip


def harness(base: Path) -> Harness:
    """Build a venv in ``base`` whose console script runs this package, ``helper_mod`` editable.

    No network and no installer: the venv's one ``.pth`` file puts this
    package's source and its dependencies (this venv's site-packages) on the
    path, and an editable source, ``src/helper_mod.py``.
    """
    import venv

    import codegenie.eval

    home = base / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(home)
    python = home / "bin" / "python"
    found = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    site = Path(found.stdout.strip())
    source = base / "src"
    source.mkdir()
    (source / "helper_mod.py").write_text('ANSWER = "solved"\n')
    package_source = Path(codegenie.eval.__file__).parents[2]
    import site as here

    (site / "harness.pth").write_text(
        "\n".join([str(package_source), *here.getsitepackages(), str(source)]) + "\n"
    )
    script = home / "bin" / "codegenie-bench"
    script.write_text(
        f"#!{python}\nimport sys\nfrom codegenie.eval.__main__ import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return Harness(script, site, source)


def importing_bench(base: Path) -> Path:
    """A bench of one case whose rubric asks the editable ``helper_mod`` for the answer."""
    from .factory import make_bench, write_case

    bench = make_bench(base / "repo", "imported", parts=True)
    package = bench.root / "imported"
    (package / "rubric.py").write_text(IMPORTING_RUBRIC, encoding="utf-8")
    shutil.rmtree(package / "cases")
    write_case(package / "cases", "one", "", input_files={"answer.txt": "todo\n"},
               expected_files={"answer.txt": "solved\n"})  # fmt: skip
    (base / "repo" / "runs" / "one").mkdir(parents=True)
    (base / "repo" / "runs" / "one" / "answer.txt").write_text("solved\n")
    return bench.base


def graded(tool: Harness, repo: Path, *args: str) -> dict[str, Any]:
    done = tool.run(
        repo, "--format", "json", *args, "grade", "imported", "runs", "--sandbox", "none"
    )
    assert done.returncode in (0, 1), done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_an_editable_modules_edit_is_not_served_the_old_verdict(tmp_path: Path) -> None:
    """A module of an editable install edited in place (no installer) is another interpreter:
    the ledger answers as --no-cache does, and says why it reused nothing."""
    tool, repo = harness(tmp_path), importing_bench(tmp_path)
    first = graded(tool, repo)
    assert (first["results"][0]["status"], first["reused"]) == ("passed", 0)
    assert graded(tool, repo)["reused"] == 1  # unchanged: served
    (tool.source / "helper_mod.py").write_text('ANSWER = "other"\n')
    served = graded(tool, repo)
    fresh = graded(tool, repo, "--no-cache")
    assert served["results"][0]["status"] == fresh["results"][0]["status"] == "failed"
    assert served["ledger"] == {
        "looked_up": 1,
        "reused": 0,
        "interpreter_changed": 1,
        "changes": [f"the editable source {tool.source} changed"],
    }
    assert fresh["ledger"] is None
    (tool.source / "helper_mod.py").write_text('ANSWER = "solved"  # back\n')
    text = tool.run(repo, "grade", "imported", "runs", "--sandbox", "none")
    assert text.returncode == 0, text.stderr
    assert (
        "0 of 1 result reused: the interpreter's packages changed since they were stored "
        f"(the editable source {tool.source} changed)"
    ) in text.stderr


def test_an_unrelated_distribution_added_says_why_nothing_was_reused(tmp_path: Path) -> None:
    """Installing a distribution (a dist-info appears) is another interpreter; grade says so,
    in JSON and in words, and what was stored for the new one is served afterwards."""
    tool, repo = harness(tmp_path), importing_bench(tmp_path)
    assert graded(tool, repo)["reused"] == 0
    info = tool.site / "orbit-2.9.0.dist-info"  # installed nowhere else on the path
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: orbit\nVersion: 2.9.0\n")
    text = tool.run(repo, "grade", "imported", "runs", "--sandbox", "none")
    assert text.returncode == 0, text.stderr
    assert (
        "0 of 1 result reused: the interpreter's packages changed since they were stored "
        "(orbit 2.9.0 added)"
    ) in text.stderr
    info.rename(tool.site / "orbit-2.10.0.dist-info")
    upgraded = graded(tool, repo)
    assert upgraded["ledger"]["changes"] == ["orbit 2.9.0 to 2.10.0"]
    again = graded(tool, repo)
    assert again["reused"] == 1
    assert again["ledger"] == {
        "looked_up": 1, "reused": 1, "interpreter_changed": 0, "changes": []
    }  # fmt: skip


def _seen(top: Path) -> list[tuple[object, ...]]:
    """What a rubric can see of a tree besides its bytes: each entry's kind, mode, times, owner,
    extended attributes and link text (not ctime or inode numbers, which no copy can fix, nor a
    directory's access time, which listing it here moves)."""
    seen: list[tuple[object, ...]] = []
    for path in sorted([top, *top.rglob("*")]):
        status = path.lstat()
        link = os.readlink(path) if path.is_symlink() else None
        try:
            attributes = sorted(os.listxattr(path, follow_symlinks=False))
        except OSError:
            attributes = []
        seen.append((
            str(path.relative_to(top)), status.st_mode, status.st_mtime_ns,
            None if path.is_dir() and not path.is_symlink() else status.st_atime_ns,
            status.st_uid, status.st_gid, attributes, link,
        ))  # fmt: skip
    return seen


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    file_modes=st.lists(st.integers(0, 0o7777), min_size=3, max_size=3),
    directory_modes=st.lists(st.integers(0o500, 0o7777), min_size=2, max_size=2),
    times=st.lists(st.integers(0, 2**33 * 10**9), min_size=3, max_size=3),
)
def test_two_trees_with_one_digest_have_copies_a_rubric_cannot_tell_apart(
    tmp_path_factory: pytest.TempPathFactory,
    file_modes: list[int],
    directory_modes: list[int],
    times: list[int],
) -> None:
    """Whatever the modes (set-user-ID and 0000 included) and times of a tree, its copy is the
    copy of the same tree made plainly, and has its digest."""
    from codegenie.eval.rubrics import _copy_tree

    base = tmp_path_factory.mktemp("copies")
    trees = []
    for name in ("plain", "odd"):
        top = base / name
        build(top, {"a.txt": b"a\n", "sub/b.sh": b"#!/bin/sh\n", "sub/deeper/c": b""})
        (top / "link").symlink_to("sub/b.sh")
        (top / "empty").mkdir()
        (top / "sub" / "b.sh").chmod(0o755)
        trees.append(top)
    odd = trees[1]
    files = [odd / "a.txt", odd / "sub" / "b.sh", odd / "sub" / "deeper" / "c"]
    # The executable bit is the one bit the digest covers: b.sh keeps one, the others none.
    modes = [file_modes[0] & ~0o111, file_modes[1] | 0o100, file_modes[2] & ~0o111]
    for path, mode, when in zip(files, modes, times, strict=True):
        os.utime(path, ns=(when, when))
        path.chmod(mode)
    (odd / "sub" / "deeper").chmod(directory_modes[0])
    (odd / "sub").chmod(directory_modes[1])
    os.utime(odd / "empty", ns=(times[0], times[0]))
    os.utime(odd / "link", ns=(times[1], times[1]), follow_symlinks=False)
    try:
        assert tree_digest(trees[0]) == tree_digest(odd) is not None
        copies = []
        for top in trees:
            copies.append(base / f"{top.name}-copy")
            _copy_tree(str(top), str(copies[-1]), "candidate", follow=False)
        assert _seen(copies[0]) == _seen(copies[1])
        assert tree_digest(copies[1]) == tree_digest(odd)
    finally:
        for top in trees:
            remove_tree(str(top))


@pytest.mark.parametrize(
    ("summary", "sentence"),
    [
        (LedgerSummary(looked_up=40, reused=40), None),
        (LedgerSummary(looked_up=40, interpreter_changed=40, changes=("ray 2.9.0 added",)),
         "0 of 40 results reused: the interpreter's packages changed since they were stored "
         "(ray 2.9.0 added)"),
        (LedgerSummary(looked_up=40, reused=38, interpreter_changed=2, changes=("x.pth changed",)),
         "38 of 40 results reused; 2 not: the interpreter's packages changed since they were "
         "stored (x.pth changed)"),
        (LedgerSummary(looked_up=1, interpreter_changed=1, changes=("python 3.11.4 to 3.11.7",)),
         "0 of 1 result reused: the interpreter changed since they were stored "
         "(python 3.11.4 to 3.11.7)"),
    ],
)  # fmt: skip
def test_the_summary_says_why_results_were_not_reused(
    summary: LedgerSummary, sentence: str | None
) -> None:
    """Only a change of interpreter is said; the counts and what changed are in the sentence."""
    assert summary.not_reused_sentence() == sentence
