"""The run spec: everything a rubric run depends on is in it, its key reads it alone, it travels."""

from __future__ import annotations

import dataclasses
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegenie.eval._command import RubricCommand
from codegenie.eval._env.spec import EnvironmentSpec
from codegenie.eval._run.environment import HOST_ROOT, RunEnvironment
from codegenie.eval._run.spec import RunSpec, TreeRef
from codegenie.eval._sandbox.limits import LIMIT_FIELDS, Limits
from codegenie.eval._sandbox.packages import installed
from codegenie.eval._sandbox.policy import Interpreter
from codegenie.eval._sandbox.provider import REVISIONS, choose_sandbox
from codegenie.eval.cases import Case


def bench(root: Path) -> Path:
    """A task class with a rubric, a data file and one case; return its directory."""
    files = {
        "tc/registration.py": "# registration\n",
        "tc/rubric.py": "print('{}')\n",
        "tc/other_rubric.py": "print('{}')\n",
        "tc/data.csv": "a,b\n",
        "tc/cases/one/case.toml": "timeout = 5\n",
        "tc/cases/one/input/x.txt": "in\n",
        "tc/cases/one/expected/x.txt": "out\n",
        "candidate/x.txt": "candidate\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "tc"


def spec_in(root: Path) -> RunSpec:
    """The spec of grading ``root/candidate`` against case ``one``, read (made if not there)."""
    tc = root / "tc"
    if not tc.exists():
        bench(root)
    case = Case(task_class="t", id="one", directory=tc / "cases" / "one", timeout=5)
    return RunSpec.of(tc / "rubric.py", case, root / "candidate", sandbox="bwrap/2").read()


def with_interpreter(spec: RunSpec, interpreter: Interpreter) -> RunSpec:
    """``spec`` with ``interpreter`` in its environment, nothing else changed."""
    return dataclasses.replace(
        spec, environment=dataclasses.replace(spec.environment, interpreter=interpreter)
    )


def other(ref: TreeRef) -> TreeRef:
    return TreeRef(ref.path, "0" * 64)


# One change to each field of a read spec. Paths are not part of a run's identity (the
# same trees elsewhere are the same run): a field that is a path is changed by what it
# leads to, which the read gives.
CHANGES: dict[str, Callable[[RunSpec], RunSpec]] = {
    "rubric": lambda s: dataclasses.replace(
        s, rubric=str(Path(s.rubric).with_name("other_rubric.py"))
    ),
    "task_class": lambda s: dataclasses.replace(s, task_class=other(s.task_class)),
    "cases": lambda s: dataclasses.replace(s, cases=str(Path(s.cases).parent / "data.csv")).read(),
    "case_id": lambda s: dataclasses.replace(s, case_id="two"),
    "case": lambda s: dataclasses.replace(s, case=other(s.case)),
    "candidate": lambda s: dataclasses.replace(s, candidate=other(s.candidate)),
    "command": lambda s: dataclasses.replace(
        s, command=RubricCommand(("sh", "{rubric}", "{case}", "{candidate}"))
    ),
    "environment": lambda s: with_interpreter(
        s, dataclasses.replace(s.interpreter, version=s.interpreter.version + "+")
    ),
    "limits": lambda s: dataclasses.replace(s, limits=Limits(memory=256)),
    "timeout": lambda s: dataclasses.replace(s, timeout=s.timeout + 1),
    "sandbox": lambda s: dataclasses.replace(s, sandbox="none/2"),
    "warm": lambda s: dataclasses.replace(s, warm=False),
    "reads_expected": lambda s: dataclasses.replace(s, reads_expected=True),
}


# Fields the key covers through another (none: the declaration of the task class's
# environment, a part of ``environment``, is keyed by its interpreter, whose packages name
# the environment's digest and what was installed).
COVERED_ELSEWHERE: set[str] = set()


def test_every_field_of_the_spec_has_a_change_that_the_key_sees() -> None:
    """A field added to the spec without a row here fails: nothing a run depends on is unkeyed."""
    fields = {field.name for field in dataclasses.fields(RunSpec)}
    assert set(CHANGES) | COVERED_ELSEWHERE == fields
    assert not set(CHANGES) & COVERED_ELSEWHERE


def test_the_environment_s_declaration_is_keyed_by_its_interpreter_alone(tmp_path: Path) -> None:
    """Where the requirements file lies does not make another run; its interpreter does."""
    spec = spec_in(tmp_path)
    declared = EnvironmentSpec(Path("/a/envs/np.txt"), b"numpy==2.1\n", "3.12")
    moved = EnvironmentSpec(Path("/node/requirements-1.txt"), b"numpy==2.1\n", "3.12")
    with_env = dataclasses.replace(
        spec, environment=dataclasses.replace(spec.environment, declared=declared)
    )
    assert (
        dataclasses.replace(
            spec, environment=dataclasses.replace(spec.environment, declared=moved)
        ).key()
        == with_env.key()
    )
    rebuilt = with_interpreter(
        with_env, dataclasses.replace(spec.interpreter, packages="environment other")
    )
    assert rebuilt.key() != with_env.key()


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_changing_any_one_field_changes_the_key(tmp_path: Path, field: str) -> None:
    spec = spec_in(tmp_path)
    assert spec.key() is not None
    changed = CHANGES[field](spec)
    assert changed.key() is not None
    assert changed.key() != spec.key()


@pytest.mark.parametrize("field", LIMIT_FIELDS)
def test_each_limit_is_in_the_key(tmp_path: Path, field: str) -> None:
    spec = spec_in(tmp_path)
    value = getattr(spec.limits, field)
    changed = dataclasses.replace(spec.limits, **{field: 7 if value != 7 else 8})
    assert dataclasses.replace(spec, limits=changed).key() != spec.key()


@pytest.mark.parametrize(
    "part", ["version", "packages", "executable-and-prefixes"], ids=lambda part: part
)
def test_the_interpreter_that_runs_is_in_the_key_but_not_where_it_lies(
    tmp_path: Path, part: str
) -> None:
    """Its version and its packages count; the path it is started by does not."""
    spec = spec_in(tmp_path)
    python = spec.interpreter
    if part == "version":
        changed = dataclasses.replace(python, version="3.99.0")
    elif part == "packages":
        changed = dataclasses.replace(python, packages="f" * 32)
    else:
        changed = dataclasses.replace(python, executable=Path("/elsewhere/python"), prefixes=())
    key = with_interpreter(spec, changed).key()
    assert (key == spec.key()) == (part == "executable-and-prefixes")


def test_the_same_trees_elsewhere_are_the_same_run(tmp_path: Path) -> None:
    """Nothing changed but where the bench lies: the key stays, so a moved checkout reuses."""
    (tmp_path / "a").mkdir()
    bench(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b", symlinks=True)
    first, second = spec_in(tmp_path / "a"), spec_in(tmp_path / "b")
    assert first.rubric != second.rubric
    assert first.key() == second.key()
    assert spec_in(tmp_path / "a").key() == first.key()  # and reading again gives it again


def test_an_edit_to_any_tree_changes_the_key(tmp_path: Path) -> None:
    bench(tmp_path)
    keys = {spec_in(tmp_path).key()}
    for name in ("tc/data.csv", "tc/cases/one/input/x.txt", "candidate/x.txt"):
        with (tmp_path / name).open("a") as file:
            file.write("more\n")
        keys.add(spec_in(tmp_path).key())
    assert len(keys) == 4


def test_an_unread_spec_has_no_key(tmp_path: Path) -> None:
    bench(tmp_path)
    tc = tmp_path / "tc"
    case = Case(task_class="t", id="one", directory=tc / "cases" / "one")
    spec = RunSpec.of(tc / "rubric.py", case, tmp_path / "candidate", sandbox="bwrap/2")
    assert spec.key() is None
    assert spec.read().key() is not None


def test_a_candidate_in_the_case_is_keyed_by_its_place(tmp_path: Path) -> None:
    """``expected/`` and ``input/`` are covered by the case's digest: keyed by name, not re-read."""
    bench(tmp_path)
    tc = tmp_path / "tc"
    case = Case(task_class="t", id="one", directory=tc / "cases" / "one")
    sides = [
        RunSpec.of(tc / "rubric.py", case, case.directory / side, sandbox="bwrap/2").read()
        for side in ("expected", "input")
    ]
    assert [spec.candidate.digest for spec in sides] == ["case:expected", "case:input"]
    assert sides[0].key() != sides[1].key()


def test_the_spec_takes_the_case_limits_timeout_and_the_running_interpreter(
    tmp_path: Path,
) -> None:
    bench(tmp_path)
    tc = tmp_path / "tc"
    case = Case(task_class="t", id="one", directory=tc / "cases" / "one", timeout=7.0)
    case = case.model_copy(update={"limits": Limits(memory=300)})
    spec = RunSpec.of(tc / "rubric.py", case, tmp_path / "candidate", sandbox="none/2")
    assert (spec.limits, spec.timeout) == (case.limits, 7.0)
    assert spec.limits.memory == 300
    assert spec.interpreter == Interpreter.current()
    assert str(spec.interpreter.executable) == sys.executable
    assert spec.cases == str(tc / "cases")
    assert spec.task_class.path == str(tc)


def test_each_provider_names_its_policy_revision() -> None:
    assert choose_sandbox("none").policy == f"none/{REVISIONS['none']}"


def test_a_package_installed_or_upgraded_changes_the_interpreter_digest(tmp_path: Path) -> None:
    """``pip install -U`` of a package a rubric imports: its dist-info's name changes."""
    site = tmp_path / "site-packages"
    site.mkdir()
    digests = [installed([str(site)]).digest]
    (site / "requests-2.31.0.dist-info").mkdir()
    digests.append(installed([str(site)]).digest)
    (site / "requests-2.31.0.dist-info").rename(site / "requests-2.32.0.dist-info")
    digests.append(installed([str(site)]).digest)
    (site / "local.pth").write_text("/src/one\n")
    digests.append(installed([str(site)]).digest)
    (site / "local.pth").write_text("/src/two\n")
    digests.append(installed([str(site)]).digest)
    (site / "requests").mkdir()  # a package's own files are not what the digest reads
    digests.append(installed([str(site)]).digest)
    assert len(set(digests)) == 5
    assert digests[-1] == digests[-2]


def test_a_spec_crosses_a_process_boundary_without_bench_code(tmp_path: Path) -> None:
    """Unpickled in a fresh interpreter, a spec needs neither the bench nor the loader."""
    spec = spec_in(tmp_path)
    child = (
        "import pickle, sys\n"
        "spec = pickle.loads(sys.stdin.buffer.read())\n"
        "print(spec.key())\n"
        "loaded = [m for m in sys.modules if m in ('codegenie.eval.cases', "
        "'codegenie.eval.loader', 'codegenie.eval.registry', 'pydantic') or m.startswith('tc')]\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child],
        input=pickle.dumps(spec),
        capture_output=True,
        check=True,
        cwd=tmp_path,
    )
    key, loaded = done.stdout.decode().splitlines()
    assert (key, loaded) == (spec.key(), "[]")


def test_a_spec_is_frozen_and_equal_by_value(tmp_path: Path) -> None:
    spec = spec_in(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.timeout = 1.0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert hash(spec) == hash(pickle.loads(pickle.dumps(spec)))


def test_an_editable_sources_modules_are_in_the_packages_digest(tmp_path: Path) -> None:
    """A module of an editable source (a .pth names its directory, or a setuptools finder maps
    it) edited in place changes the digest; its other files and __pycache__ do not."""
    site, src, mapped = tmp_path / "site", tmp_path / "src", tmp_path / "mapped"
    for directory in (site, src / "pkg" / "__pycache__", mapped):
        directory.mkdir(parents=True)
    (site / "pkg.pth").write_text(f"import os\n{src}\n# a comment\n")
    (src / "pkg" / "__init__.py").write_text("A = 1\n")
    (mapped / "mod.py").write_text("B = 1\n")
    (site / "__editable___mod_1_0_finder.py").write_text(
        f"MAPPING: dict[str, str] = {{'mod': {str(mapped / 'mod.py')!r}}}\n"
    )
    first = installed([str(site)])
    (src / "pkg" / "README.txt").write_text("not a module\n")
    (src / "pkg" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0")
    assert installed([str(site)]) == first
    (src / "pkg" / "__init__.py").write_text("A = 2\n")
    second = installed([str(site)])
    (mapped / "mod.py").write_text("B = 2\n")
    third = installed([str(site)])
    assert len({first.digest, second.digest, third.digest}) == 3
    assert sorted(first.parsed()["sources"]) == [str(mapped / "mod.py"), str(src)]


def test_an_editable_source_beyond_its_bounds_leaves_runs_unkeyed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editable source that cannot be read whole: no run of that interpreter has a key."""
    from codegenie.eval._sandbox import packages
    from codegenie.eval._tree import TreeBounds

    site, src = tmp_path / "site", tmp_path / "src"
    site.mkdir()
    src.mkdir()
    (site / "pkg.pth").write_text(f"{src}\n")
    for index in range(3):
        (src / f"m{index}.py").write_text("\n")
    monkeypatch.setattr(packages, "_SOURCE_BOUNDS", TreeBounds(entries=2))
    assert installed([str(site)]).digest == packages.UNKEYED
    spec = with_interpreter(
        spec_in(tmp_path), dataclasses.replace(Interpreter.current(), packages=packages.UNKEYED)
    )
    assert spec.read().key() is None


@pytest.mark.parametrize(
    ("before", "after", "said"),
    [
        ({"ray-2.9.0.dist-info"}, set(), ["ray 2.9.0 removed"]),
        (set(), {"ray-2.9.0.dist-info"}, ["ray 2.9.0 added"]),
        ({"numpy-1.26.4.dist-info"}, {"numpy-2.0.0.dist-info"}, ["numpy 1.26.4 to 2.0.0"]),
        (set(), {"old-1.0-py3.11.egg-info"}, ["old 1.0 added"]),
        (set(), {f"p{i}-1.dist-info" for i in range(5)},
         ["p0 1 added", "p1 1 added", "p2 1 added", "and 2 more"]),
    ],
)  # fmt: skip
def test_what_changed_between_two_interpreters_is_said_in_words(
    tmp_path: Path, before: set[str], after: set[str], said: list[str]
) -> None:
    """Distributions added, removed or upgraded are named with their versions, a few at most."""
    from codegenie.eval._sandbox.packages import changes

    documents = []
    for index, names in enumerate((before, after)):
        site = tmp_path / f"site{index}"
        site.mkdir()
        for name in names:
            (site / name).mkdir()
        document = installed([str(site)]).parsed()
        document["sites"][0]["path"] = "site"  # the same directory, before and after
        documents.append({"python": "3.11.7 (main) cpython-311", **document})
    assert changes(documents[0], documents[1]) == said
    assert changes(documents[0], {**documents[0], "python": "3.12.1 (main) cpython-312"}) == [
        "python 3.11.7 to 3.12.1"
    ]


SHELL = RubricCommand(("sh", "{rubric}", "{case}", "{candidate}"))


def test_a_spec_runs_the_rubric_protocol_s_command_on_the_host_unless_told(
    tmp_path: Path,
) -> None:
    """The default spec's command is today's ``python -B RUBRIC CASE CANDIDATE``, on ``/``."""
    spec = spec_in(tmp_path)
    assert spec.command == RubricCommand()
    assert spec.environment == RunEnvironment(Interpreter.current(), None, HOST_ROOT)
    assert spec.interpreter is spec.environment.interpreter
    argv = spec.command.render(
        python=str(spec.interpreter.executable), rubric=spec.rubric, case="C", candidate="D"
    )
    assert argv == [sys.executable, "-B", spec.rubric, "C", "D"]
    case = Case(task_class="t", id="one", directory=tmp_path / "tc" / "cases" / "one")
    shell = RunSpec.of(spec.rubric, case, tmp_path / "candidate", sandbox="x/1", command=SHELL)
    assert shell.command is SHELL


def test_the_root_of_the_environment_is_in_the_key(tmp_path: Path) -> None:
    """Another root is another run, whatever else stays."""
    spec = spec_in(tmp_path)
    elsewhere = dataclasses.replace(
        spec, environment=dataclasses.replace(spec.environment, root="/srv/roots/debian")
    )
    assert elsewhere.key() not in (None, spec.key())


commands = st.lists(
    st.sampled_from(["sh", "bash", "{rubric}", "-e", "--x={case}", "{{", "a b"]), max_size=3
).map(lambda words: RubricCommand(("run", *words, "{case}", "{candidate}")))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(first=commands, second=commands)
def test_the_key_follows_the_command_s_words_and_nothing_else(
    tmp_path: Path, first: RubricCommand, second: RubricCommand
) -> None:
    """Two specs differing only in their commands share a key exactly when the words agree."""
    spec = spec_in(tmp_path)
    one = dataclasses.replace(spec, command=first)
    two = dataclasses.replace(spec, command=second)
    assert one.key() is not None
    assert (one.key() == two.key()) == (first.words == second.words)


def test_a_spec_with_a_command_crosses_a_process_boundary(tmp_path: Path) -> None:
    """Unpickled in a fresh interpreter, a shell rubric's spec keeps its command and its key."""
    spec = dataclasses.replace(spec_in(tmp_path), command=SHELL)
    child = (
        "import pickle, sys\n"
        "spec = pickle.loads(sys.stdin.buffer.read())\n"
        "print(spec.key(), spec.command.python, ' '.join(spec.command.words))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child],
        input=pickle.dumps(spec),
        capture_output=True,
        check=True,
        cwd=tmp_path,
    )
    assert done.stdout.decode().split(" ", 2) == [
        str(spec.key()),
        "False",
        "sh {rubric} {case} {candidate}\n",
    ]


def test_only_a_plain_only_run_says_so_in_its_key(tmp_path: Path) -> None:
    """A run that may be forked warm keys as before; one whose task class says warm=False differs."""
    spec = spec_in(tmp_path)
    document = spec.key_document()
    assert document is not None
    assert "warm" not in document
    plain = dataclasses.replace(spec, warm=False).key_document()
    assert plain == {**document, "warm": False}
