"""load_task_class: the eight steps of ADR-0002 and the original story's AC-3 … AC-20."""

from __future__ import annotations

import inspect
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from codegenie.eval import TaskClass, TaskClassRegistry, register_task_class
from codegenie.eval.errors import (
    BenchCaseLoadError,
    BenchManifestInvalid,
    BenchManifestNotFound,
    BenchRootNotFound,
    InvalidTaskClassName,
    TaskClassAlreadyRegistered,
    TaskClassModuleMismatch,
    TaskClassNotFound,
    TaskClassRegistrationFailed,
    TaskClassRootConflict,
)
from codegenie.eval.loader import load_task_class
from codegenie.eval.manifest import BenchManifest
from codegenie.eval.naming import RESERVED_SLUGS, SLUG_PATTERN

from .factory import Bench, make_bench

# -- step 1: the name --------------------------------------------------------

INVALID_NAMES = [
    ("", "empty"),
    ("a", "too short"),
    ("a" * 65, "too long"),
    ("Foo", "wrong case"),
    ("FOO-", "wrong case"),
    ("-foo", "leading hyphen"),
    ("foo-", "trailing hyphen"),
    ("foo/bar", "non-slug character"),
    ("foo.bar", "non-slug character"),
    ("../etc/passwd", "non-slug character"),
    ("_internal", "non-slug character"),
    ("foo_bar", "non-slug character"),
    ("1foo", "non-slug character"),
    ("foo\n", "non-slug character"),
    ("café", "non-slug character"),
    ("foo bar", "non-slug character"),
    ("registration", "reserved name"),
    ("class", "reserved name"),
    ("import", "reserved name"),
]


@pytest.mark.parametrize(("name", "reason"), INVALID_NAMES)
def test_invalid_name_is_refused_with_its_reason_before_any_filesystem_access(
    name: str, reason: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that breaks a slug rule raises InvalidTaskClassName(name, reason), touching nothing."""

    def no_filesystem(*_: object, **__: object) -> None:
        raise AssertionError("the filesystem was touched")

    path_before = list(sys.path)
    with monkeypatch.context() as patch:
        patch.setattr(Path, "resolve", no_filesystem)
        patch.setattr(os, "stat", no_filesystem)
        with pytest.raises(InvalidTaskClassName) as exc:
            load_task_class(name, tmp_path / "nonexistent", registry=TaskClassRegistry())
    assert exc.value.name == name
    assert exc.value.reason == reason
    assert sys.path == path_before


@pytest.mark.parametrize("bad", [123, None, b"foo", ["foo"], 1.5])
def test_non_str_name_raises_type_error(bad: object, tmp_path: Path) -> None:
    """A name that is not a str is a programming error: TypeError."""
    with pytest.raises(TypeError, match="must be a str"):
        load_task_class(bad, tmp_path, registry=TaskClassRegistry())  # type: ignore[arg-type]


# -- step 2: the bench root ---------------------------------------------------


def test_missing_bench_root_raises_typed(tmp_path: Path) -> None:
    """A bench root that does not exist raises BenchRootNotFound with the resolved path."""
    with pytest.raises(BenchRootNotFound) as exc:
        load_task_class("foo", tmp_path / "nonexistent", registry=TaskClassRegistry())
    assert exc.value.bench_root == (tmp_path / "nonexistent").resolve()


def test_bench_root_that_is_a_file_raises_typed(tmp_path: Path) -> None:
    """A regular file where the bench root should be raises BenchRootNotFound."""
    file = tmp_path / "bench"
    file.write_text("not a directory")
    with pytest.raises(BenchRootNotFound) as exc:
        load_task_class("foo", file, registry=TaskClassRegistry())
    assert exc.value.bench_root == file.resolve()


def test_broken_symlink_bench_root_raises_typed(tmp_path: Path) -> None:
    """A bench root that is a dangling symlink raises BenchRootNotFound, sys.path untouched."""
    link = tmp_path / "bench"
    link.symlink_to(tmp_path / "gone")
    before = list(sys.path)
    with pytest.raises(BenchRootNotFound) as exc:
        load_task_class("foo", link, registry=TaskClassRegistry())
    assert exc.value.bench_root == (tmp_path / "gone").resolve()
    assert sys.path == before


# -- step 3: the manifest -------------------------------------------------------


def test_missing_manifest_raises_not_found_naming_the_first_place_looked(tmp_path: Path) -> None:
    """Without a bench.toml above the root, BenchManifestNotFound names <parent>/bench.toml."""
    (tmp_path / "bench").mkdir()
    with pytest.raises(BenchManifestNotFound) as exc:
        load_task_class("foo", tmp_path / "bench", registry=TaskClassRegistry())
    assert exc.value.path == tmp_path.resolve() / "bench.toml"


def test_invalid_manifest_raises_before_any_import(tmp_path: Path) -> None:
    """A broken bench.toml raises BenchManifestInvalid and imports nothing."""
    log = tmp_path / "side_effects.txt"
    bench = make_bench(tmp_path, "foo", log=log)
    bench.manifest.write_text("schema-version = 1\n[task-classes.foo]\nmodule = 3\n")
    with pytest.raises(BenchManifestInvalid) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert [(p.line, p.key) for p in exc.value.problems] == [
        (2, "task-classes.foo"),
        (3, "task-classes.foo.module"),
    ]
    assert not log.exists()


def test_manifest_is_found_above_the_root_parent(tmp_path: Path) -> None:
    """The nearest bench.toml in the root's parent or above is used."""
    bench = Bench(tmp_path)
    bench.add("foo", root="suites/bench")
    task_class = load_task_class("foo", tmp_path / "suites" / "bench", registry=TaskClassRegistry())
    assert task_class.name == "foo"


def test_explicit_manifest_argument_is_used(tmp_path: Path) -> None:
    """manifest= replaces discovery."""
    bench = make_bench(tmp_path / "a", "foo")
    other = tmp_path / "elsewhere" / "bench"
    other.parent.mkdir()
    other.symlink_to(bench.root)
    manifest = BenchManifest.load(bench.manifest)
    task_class = load_task_class("foo", bench.root, registry=TaskClassRegistry(), manifest=manifest)
    assert task_class.source == (bench.root / "foo" / "registration.py").resolve()


def test_edited_manifest_is_read_again(tmp_path: Path) -> None:
    """A slug added to bench.toml after an earlier load in the process is found."""
    bench = make_bench(tmp_path, "foo")
    registry = TaskClassRegistry()
    load_task_class("foo", bench.root, registry=registry)
    bench.add("bar")
    assert load_task_class("bar", bench.root, registry=registry).name == "bar"


# -- step 4: the request against the manifest -----------------------------------


def test_typo_gets_suggestions_before_any_import(tmp_path: Path) -> None:
    """A slug the manifest lacks raises TaskClassNotFound with close matches, importing nothing."""
    log = tmp_path / "side_effects.txt"
    bench = make_bench(tmp_path, "vuln-remediation", "migration-chainguard-distroless", log=log)
    path_before = list(sys.path)
    with pytest.raises(TaskClassNotFound) as exc:
        load_task_class("vuln-remediaton", bench.root, registry=TaskClassRegistry())
    assert exc.value.name == "vuln-remediaton"
    assert exc.value.suggestions == ("vuln-remediation",)
    assert exc.value.available_names == ("vuln-remediation", "migration-chainguard-distroless")
    assert exc.value.looked_up_in == str(bench.manifest.resolve())
    assert "did you mean 'vuln-remediation'?" in str(exc.value)
    assert sys.path == path_before
    assert not log.exists()
    assert not any(name.startswith("bench") for name in sys.modules)


def test_declared_root_is_enforced_before_any_import(tmp_path: Path) -> None:
    """Asking for a slug from a root other than its declared one is a TaskClassRootConflict."""
    log = tmp_path / "side_effects.txt"
    bench = make_bench(tmp_path, "foo", log=log)
    copy = tmp_path / "bench-copy"
    copy.mkdir()
    path_before = list(sys.path)
    with pytest.raises(TaskClassRootConflict) as exc:
        load_task_class("foo", copy, registry=TaskClassRegistry())
    assert exc.value.name == "foo"
    assert exc.value.first_root == bench.root.resolve()
    assert exc.value.second_root == copy.resolve()
    assert exc.value.declared_in == bench.manifest.resolve()
    assert sys.path == path_before
    assert not log.exists()


def test_second_call_with_different_bench_root_raises_root_conflict(tmp_path: Path) -> None:
    """A slug loaded from root A cannot then be loaded from root B (AC-7)."""
    root_a = make_bench(tmp_path / "a", "foo").root
    log = tmp_path / "b_side_effects.txt"
    root_b = make_bench(tmp_path / "b", "foo", log=log).root
    registry = TaskClassRegistry()
    load_task_class("foo", root_a, registry=registry)
    path_before = list(sys.path)
    with pytest.raises(TaskClassRootConflict) as exc:
        load_task_class("foo", root_b, registry=registry)
    assert exc.value.name == "foo"
    assert exc.value.first_root == root_a.resolve()
    assert exc.value.second_root == root_b.resolve()
    assert exc.value.declared_in is None
    assert sys.path == path_before
    assert not log.exists()


def test_different_names_from_different_roots_both_work(tmp_path: Path) -> None:
    """foo from root A and bar from root B both load; each parent is on sys.path once (AC-8)."""
    root_a = make_bench(tmp_path / "a", "foo").root
    root_b = make_bench(tmp_path / "b", "bar").root
    registry = TaskClassRegistry()
    foo = load_task_class("foo", root_a, registry=registry)
    bar = load_task_class("bar", root_b, registry=registry)
    assert foo is registry.get("foo")
    assert bar is registry.get("bar")
    assert sys.path.count(str(root_a.resolve().parent)) == 1
    assert sys.path.count(str(root_b.resolve().parent)) == 1


# -- steps 5 and 6: first load and cache hit ---------------------------------------


def test_first_call_runs_module_body_exactly_once_and_second_is_cached(tmp_path: Path) -> None:
    """The body runs once (external counter); the second call returns the same object (AC-5, AC-6)."""
    log = tmp_path / "side_effects.txt"
    bench = make_bench(tmp_path, "stub-task-class", log=log)
    registry = TaskClassRegistry()

    first = load_task_class("stub-task-class", bench.root, registry=registry)
    assert log.read_text().count("x\n") == 1
    try:
        second = load_task_class("stub-task-class", bench.root, registry=registry)
    except TaskClassAlreadyRegistered:
        pytest.fail("a cached load must not register again")
    assert log.read_text().count("x\n") == 1
    assert first is second
    assert first is registry.get("stub-task-class")
    assert sys.path.count(str(bench.root.resolve().parent)) == 1


def test_sys_path_prepend_is_idempotent_at_index_zero(tmp_path: Path) -> None:
    """After five loads the root's parent is sys.path[0], exactly once (AC-5, AC-17)."""
    bench = make_bench(tmp_path, "stub-task-class")
    registry = TaskClassRegistry()
    length = len(sys.path)
    for _ in range(5):
        load_task_class("stub-task-class", bench.root, registry=registry)
    expected = str(bench.root.resolve().parent)
    assert sys.path[0] == expected
    assert sys.path.count(expected) == 1
    assert len(sys.path) == length + 1


def test_parent_already_on_sys_path_is_moved_to_the_front(tmp_path: Path) -> None:
    """A root parent already on sys.path elsewhere ends up first, and only once."""
    bench = make_bench(tmp_path, "foo")
    parent = str(bench.root.resolve().parent)
    sys.path.append(parent)
    load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert sys.path[0] == parent
    assert sys.path.count(parent) == 1


def test_resolved_module_file_matches_registration_path(tmp_path: Path) -> None:
    """sys.modules holds the manifest's module, loaded from the expected file (AC-5 d, e)."""
    bench = make_bench(tmp_path, "stub-task-class")
    task_class = load_task_class("stub-task-class", bench.root, registry=TaskClassRegistry())
    module = sys.modules["bench.stub_task_class.registration"]
    expected = (bench.root / "stub_task_class" / "registration.py").resolve()
    assert module.__file__ is not None
    assert Path(module.__file__).resolve() == expected
    assert task_class.source == expected
    assert task_class.module == "bench.stub_task_class.registration"


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("foo", "foo"),
        ("vuln-remediation", "vuln_remediation"),
        ("migration-chainguard-distroless", "migration_chainguard_distroless"),
        ("a-b-c-d-e", "a_b_c_d_e"),
    ],
)
def test_hyphen_to_underscore_translation(tmp_path: Path, name: str, module: str) -> None:
    """The module key uses underscores; the hyphenated form is never a module (AC-9)."""
    bench = make_bench(tmp_path, name)
    load_task_class(name, bench.root, registry=TaskClassRegistry())
    assert f"bench.{module}.registration" in sys.modules
    if name != module:
        assert f"bench.{name}.registration" not in sys.modules


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    slug=st.from_regex(SLUG_PATTERN[:-1] + r"\Z", fullmatch=True).filter(
        lambda s: len(s) <= 64 and s not in RESERVED_SLUGS
    )
)
def test_any_valid_slug_loads_through_its_identifier(
    slug: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every valid slug becomes an importable package and loads (property, AC-9)."""
    base = tmp_path_factory.mktemp("prop")
    bench = make_bench(base, slug)
    registry = TaskClassRegistry()
    task_class = load_task_class(slug, bench.root, registry=registry)
    assert task_class.name == slug
    assert task_class.module == f"bench.{slug.replace('-', '_')}.registration"
    for key in [k for k in sys.modules if k == "bench" or k.startswith("bench.")]:
        del sys.modules[key]


def test_symlinked_bench_root_resolves_identically(tmp_path: Path) -> None:
    """The real root and a symlink to it give the same task class and one sys.path entry (AC-13)."""
    bench = make_bench(tmp_path / "real", "foo")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    registry = TaskClassRegistry()
    real = load_task_class("foo", tmp_path / "real" / "bench", registry=registry)
    linked = load_task_class("foo", tmp_path / "link" / "bench", registry=registry)
    assert real is linked
    assert sys.path.count(str(bench.base.resolve())) == 1


def test_relative_and_absolute_bench_root_are_equivalent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Path('bench') from the bench's directory equals the absolute root (AC-14)."""
    bench = make_bench(tmp_path, "foo")
    monkeypatch.chdir(tmp_path)
    registry = TaskClassRegistry()
    relative = load_task_class("foo", Path("bench"), registry=registry)
    absolute = load_task_class("foo", bench.root, registry=registry)
    default = load_task_class("foo", registry=registry)
    assert relative is absolute is default
    assert sys.path.count(str(tmp_path.resolve())) == 1


def test_injected_registry_is_used_and_default_left_alone(
    tmp_path: Path, default_registry: TaskClassRegistry
) -> None:
    """registry= receives the registration of an unmodified file; default_registry stays empty (AC-16)."""
    bench = make_bench(tmp_path, "foo")
    registry = TaskClassRegistry()
    task_class = load_task_class("foo", bench.root, registry=registry)
    assert registry.get("foo") is task_class
    assert "foo" not in default_registry


def test_default_registry_is_used_without_injection(
    tmp_path: Path, default_registry: TaskClassRegistry
) -> None:
    """Without registry=, the task class lands in default_registry (AC-16)."""
    bench = make_bench(tmp_path, "foo")
    task_class = load_task_class("foo", bench.root)
    assert default_registry.get("foo") is task_class


def test_registration_actually_fires_on_the_registry(tmp_path: Path) -> None:
    """The registry gains exactly the returned task class: the decorator ran (AC-18)."""
    bench = make_bench(tmp_path, "stub-task-class")
    registry = TaskClassRegistry()
    before = set(registry.all_task_classes())
    result = load_task_class("stub-task-class", bench.root, registry=registry)
    after = set(registry.all_task_classes())
    assert after - before == {result}
    assert result is registry.get("stub-task-class")
    assert isinstance(result, TaskClass)
    assert result.cls.__name__ == "TaskClassImpl"


def test_loaded_slug_into_second_registry_is_the_same_object_without_rerun(tmp_path: Path) -> None:
    """A second registry gets the very TaskClass of the first load; the body does not run again."""
    log = tmp_path / "side_effects.txt"
    bench = make_bench(tmp_path, "foo", log=log)
    first_registry, second_registry = TaskClassRegistry(), TaskClassRegistry()
    first = load_task_class("foo", bench.root, registry=first_registry)
    second = load_task_class("foo", bench.root, registry=second_registry)
    assert first is second
    assert second_registry.get("foo") is first
    assert log.read_text().count("x\n") == 1


def test_task_class_directory_created_after_an_earlier_load_is_found(tmp_path: Path) -> None:
    """A package written after the first import in this process still imports."""
    bench = make_bench(tmp_path, "foo")
    registry = TaskClassRegistry()
    load_task_class("foo", bench.root, registry=registry)
    bench.add("bar")
    assert load_task_class("bar", bench.root, registry=registry).name == "bar"


def test_registration_print_goes_where_stdout_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loader does not swallow output; redirecting it is the CLI's job."""
    bench = make_bench(tmp_path, "foo", before="print('hello from registration')")
    load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert "hello from registration" in capsys.readouterr().out


# -- step 6 failures ------------------------------------------------------------------


def test_missing_registration_file_raises_bench_case_load_error(tmp_path: Path) -> None:
    """Directory present, registration.py absent: BenchCaseLoadError(case_dir, field, reason) (AC-10)."""
    bench = Bench(tmp_path)
    bench.add("foo", write=False)
    (bench.root / "foo").mkdir()
    path_before = list(sys.path)
    with pytest.raises(BenchCaseLoadError) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.case_dir == bench.root.resolve() / "foo"
    assert exc.value.field == "registration.py"
    assert exc.value.reason == "file not found"
    assert sys.path == path_before


def test_missing_task_class_directory_raises_bench_case_load_error(tmp_path: Path) -> None:
    """No task-class directory at all is the same typed error (AC-10)."""
    bench = Bench(tmp_path)
    bench.add("vuln-remediation", write=False)
    with pytest.raises(BenchCaseLoadError) as exc:
        load_task_class("vuln-remediation", bench.root, registry=TaskClassRegistry())
    assert exc.value.case_dir == bench.root.resolve() / "vuln_remediation"
    assert exc.value.field == "registration.py"


def test_registration_raising_is_classified_and_chained(tmp_path: Path) -> None:
    """A body that raises gives TaskClassRegistrationFailed from the cause (AC-12 a)."""
    bench = make_bench(tmp_path, "foo", before='raise RuntimeError("boom")')
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.name == "foo"
    assert exc.value.cause_type == "RuntimeError"
    assert exc.value.cause_message == "boom"
    assert isinstance(exc.value.__cause__, RuntimeError)
    assert exc.value.source == (bench.root / "foo" / "registration.py").resolve()
    assert exc.value.line == 2


def test_transitive_missing_import_is_registration_failure_not_file_not_found(
    tmp_path: Path,
) -> None:
    """A missing dependency of the registration is TaskClassRegistrationFailed (AC-12 b)."""
    bench = make_bench(tmp_path, "foo", before="import nonexistent_module")
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.cause_type == "ModuleNotFoundError"
    assert exc.value.cause_message.startswith("No module named 'nonexistent_module'")


def test_missing_sibling_module_is_registration_failure(tmp_path: Path) -> None:
    """Importing a sibling that does not exist is the registration's failure, not a missing file."""
    bench = make_bench(tmp_path, "foo", before="import bench.foo.helpers")
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.cause_type == "ModuleNotFoundError"


def test_syntax_error_points_at_its_line(tmp_path: Path) -> None:
    """A SyntaxError in the registration is classified with its line."""
    bench = make_bench(tmp_path, "foo", after="def broken(:\n    pass")
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.cause_type == "SyntaxError"
    assert exc.value.line is not None
    source = (bench.root / "foo" / "registration.py").read_text().splitlines()
    assert "def broken(" in source[exc.value.line - 1]


def test_long_cause_message_is_truncated_to_200_characters(tmp_path: Path) -> None:
    """cause_message keeps at most 200 characters."""
    bench = make_bench(tmp_path, "foo", before="raise ValueError('x' * 1000)")
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.cause_message == "x" * 200


def test_sys_exit_in_registration_is_a_registration_failure(tmp_path: Path) -> None:
    """sys.exit() in a registration does not end the process: it is a typed failure."""
    bench = make_bench(tmp_path, "foo", before="import sys\nsys.exit(0)")
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.cause_type == "SystemExit"
    assert "sys.exit(0)" in exc.value.cause_message
    assert isinstance(exc.value.__cause__, SystemExit)


def test_keyboard_interrupt_passes_through_unchanged_and_is_rolled_back(tmp_path: Path) -> None:
    """KeyboardInterrupt propagates as itself, after the load is undone."""
    bench = make_bench(
        tmp_path,
        "foo",
        after="""
            import bench.foo.helper
            raise KeyboardInterrupt
        """,
    )
    (bench.root / "foo" / "helper.py").write_text("VALUE = 1\n")
    registry = TaskClassRegistry()
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    with pytest.raises(KeyboardInterrupt):
        load_task_class("foo", bench.root, registry=registry)
    assert len(registry) == 0
    assert set(sys.modules) == modules_before
    assert sys.path == path_before


def test_failed_load_leaves_no_trace_and_a_fixed_file_loads(tmp_path: Path) -> None:
    """After a failure the registry, sys.modules and sys.path are as before; the fix loads."""
    bench = make_bench(
        tmp_path,
        "foo",
        after="""
            import bench.foo.helper
            raise RuntimeError("not yet")
        """,
    )
    (bench.root / "foo" / "helper.py").write_text("VALUE = 1\n")
    registry = TaskClassRegistry()
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    with pytest.raises(TaskClassRegistrationFailed):
        load_task_class("foo", bench.root, registry=registry)
    assert len(registry) == 0
    assert set(sys.modules) == modules_before
    assert sys.path == path_before

    bench.add("foo")  # rewrites a registration without the failure
    task_class = load_task_class("foo", bench.root, registry=registry)
    assert registry.get("foo") is task_class


def test_failed_load_keeps_modules_imported_from_outside_the_root(tmp_path: Path) -> None:
    """Undo removes the bench's modules, not a library the registration imported whole."""
    sys.modules.pop("colorsys", None)
    bench = make_bench(tmp_path, "foo", before="import colorsys\nimport bench.foo.helper")
    (bench.root / "foo" / "helper.py").write_text("VALUE = 1\n")
    bench.add("foo", before="import colorsys\nimport bench.foo.helper\nraise RuntimeError('x')")
    before = set(sys.modules)
    with pytest.raises(TaskClassRegistrationFailed):
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert set(sys.modules) - before == {"colorsys"}
    assert not [m for m in sys.modules if m == "bench" or m.startswith("bench.")]


def test_failed_load_unregisters_what_it_registered(tmp_path: Path) -> None:
    """Registrations made before the body raised are taken back."""
    bench = make_bench(tmp_path, "foo", after="raise RuntimeError('after registering')")
    registry = TaskClassRegistry()
    with pytest.raises(TaskClassRegistrationFailed):
        load_task_class("foo", bench.root, registry=registry)
    assert "foo" not in registry


def test_duplicate_registration_across_modules_is_a_registration_failure(tmp_path: Path) -> None:
    """A module registering a name another module holds fails, naming both modules."""
    bench = make_bench(tmp_path, "foo")
    bench.add("bar", register="foo")
    registry = TaskClassRegistry()
    load_task_class("foo", bench.root, registry=registry)
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("bar", bench.root, registry=registry)
    cause = exc.value.__cause__
    assert isinstance(cause, TaskClassAlreadyRegistered)
    assert cause.first_module == "bench.foo.registration"
    assert cause.second_module == "bench.bar.registration"
    assert registry.names() == ("foo",)


# -- step 7: module mismatch --------------------------------------------------------


def _installed_bench_package(tmp_path: Path) -> Path:
    site = tmp_path / "site-packages"
    package = site / "bench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "foo").mkdir()
    (package / "foo" / "__init__.py").write_text("")
    (package / "foo" / "registration.py").write_text("")
    return site


def test_installed_bench_package_shadowing_the_root_is_a_module_mismatch(tmp_path: Path) -> None:
    """A regular 'bench' package elsewhere on sys.path yields TaskClassModuleMismatch, not 'file not found'."""
    bench = make_bench(tmp_path / "repo", "foo")
    site = _installed_bench_package(tmp_path)
    sys.path.append(str(site))
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.module == "bench.foo.registration"
    assert exc.value.expected_file == bench.root.resolve() / "foo" / "registration.py"
    assert exc.value.actual_file == site / "bench" / "foo" / "registration.py"
    assert "bench" not in sys.modules


def test_shadowing_package_without_the_module_names_the_shadow(tmp_path: Path) -> None:
    """When the shadowing package lacks the module, actual_file is the shadow package's file."""
    bench = make_bench(tmp_path / "repo", "bar")
    site = _installed_bench_package(tmp_path)
    sys.path.append(str(site))
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("bar", bench.root, registry=TaskClassRegistry())
    assert exc.value.actual_file == site / "bench" / "__init__.py"


def test_bench_package_already_imported_from_elsewhere_is_a_mismatch(tmp_path: Path) -> None:
    """A 'bench' imported earlier from another place yields TaskClassModuleMismatch and stays."""
    bench = make_bench(tmp_path / "repo", "bar")
    site = _installed_bench_package(tmp_path)
    sys.path.insert(0, str(site))
    shadow = __import__("bench")
    sys.path.remove(str(site))
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("bar", bench.root, registry=TaskClassRegistry())
    assert exc.value.actual_file == site / "bench" / "__init__.py"
    assert exc.value.expected_file == bench.root.resolve() / "bar" / "registration.py"
    assert sys.modules["bench"] is shadow


def test_module_imported_earlier_from_another_root_is_a_mismatch(tmp_path: Path) -> None:
    """Two manifests mapping different slugs to one module: the second load sees the first file."""
    root_a = make_bench(tmp_path / "a", "foo").root
    bench_b = Bench(tmp_path / "b")
    bench_b.add("other", module="bench.foo.registration")
    registry = TaskClassRegistry()
    load_task_class("foo", root_a, registry=registry)
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("other", bench_b.root, registry=registry)
    assert exc.value.actual_file == root_a.resolve() / "foo" / "registration.py"
    assert exc.value.expected_file == bench_b.root.resolve() / "foo" / "registration.py"
    assert registry.names() == ("foo",)


# -- step 8: not registered ------------------------------------------------------------


def test_registration_without_decorator_raises_not_found(tmp_path: Path) -> None:
    """A module that registers nothing: TaskClassNotFound(looked_up_in=module, available=()) (AC-11 a)."""
    bench = make_bench(tmp_path, "foo", register=None)
    with pytest.raises(TaskClassNotFound) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.name == "foo"
    assert exc.value.looked_up_in == "bench.foo.registration"
    assert exc.value.available_names == ()
    assert "bench.foo.registration" not in sys.modules


def test_registration_of_another_name_surfaces_in_available_names(tmp_path: Path) -> None:
    """A module that registers a typo lists it in available_names and is rolled back (AC-11 b)."""
    bench = make_bench(tmp_path, "vuln-remediation", register="typo")
    registry = TaskClassRegistry()
    with pytest.raises(TaskClassNotFound) as exc:
        load_task_class("vuln-remediation", bench.root, registry=registry)
    assert exc.value.name == "vuln-remediation"
    assert exc.value.looked_up_in == "bench.vuln_remediation.registration"
    assert exc.value.available_names == ("typo",)
    assert "typo" not in registry


def test_module_imported_outside_the_loader_is_adopted(
    tmp_path: Path, default_registry: TaskClassRegistry
) -> None:
    """A registration imported by hand first is found in default_registry, not run again."""
    log = tmp_path / "side_effects.txt"
    bench = make_bench(tmp_path, "foo", log=log)
    sys.path.insert(0, str(bench.base))
    __import__("bench.foo.registration")
    registry = TaskClassRegistry()
    task_class = load_task_class("foo", bench.root, registry=registry)
    assert task_class is default_registry.get("foo")
    assert registry.get("foo") is task_class
    assert log.read_text().count("x\n") == 1


# -- logging and the contract in the docstring ------------------------------------------


def test_success_and_cache_hit_log_their_events(tmp_path: Path) -> None:
    """First load logs loader.task_class_loaded; the second loader.task_class_cache_hit (AC-19)."""
    bench = make_bench(tmp_path, "foo")
    registry = TaskClassRegistry()
    with capture_logs() as logs:
        load_task_class("foo", bench.root, registry=registry)
        load_task_class("foo", bench.root, registry=registry)
    expected = {
        "name": "foo",
        "bench_root": str(bench.root.resolve()),
        "module": "bench.foo.registration",
    }
    assert [entry["event"] for entry in logs] == [
        "loader.task_class_loaded",
        "loader.task_class_cache_hit",
    ]
    for entry in logs:
        assert {key: entry[key] for key in expected} == expected
    assert logs[0]["log_level"] == "info"


def _failing_case(kind: str, tmp_path: Path) -> tuple[str, Path]:
    if kind == "invalid":
        return "Foo", tmp_path
    if kind == "root":
        return "foo", tmp_path / "missing"
    if kind == "conflict":
        make_bench(tmp_path, "foo")
        (tmp_path / "bench-copy").mkdir()
        return "foo", tmp_path / "bench-copy"
    if kind == "missing-file":
        bench = Bench(tmp_path)
        bench.add("foo", write=False)
        return "foo", bench.root
    if kind == "raises":
        return "foo", make_bench(tmp_path, "foo", before="raise RuntimeError('x')").root
    if kind == "not-registered":
        return "foo", make_bench(tmp_path, "foo", register=None).root
    if kind == "no-manifest":
        (tmp_path / "bench").mkdir()
        return "foo", tmp_path / "bench"
    if kind == "not-in-manifest":
        return "bar", make_bench(tmp_path, "foo").root
    raise AssertionError(kind)


@pytest.mark.parametrize(
    ("kind", "event"),
    [
        ("invalid", "loader.invalid_task_class_name"),
        ("root", "loader.bench_root_not_found"),
        ("conflict", "loader.task_class_root_conflict"),
        ("missing-file", "loader.registration_file_missing"),
        ("raises", "loader.registration_import_failed"),
        ("not-registered", "loader.task_class_not_registered_after_import"),
        ("not-in-manifest", "loader.task_class_not_in_manifest"),
        ("no-manifest", "loader.manifest_unusable"),
    ],
)
def test_each_failure_path_logs_one_distinct_error_event(
    kind: str, event: str, tmp_path: Path
) -> None:
    """Every failure logs exactly one error event with its own ID (AC-19)."""
    name, root = _failing_case(kind, tmp_path)
    with capture_logs() as logs, pytest.raises((Exception,)):
        load_task_class(name, root, registry=TaskClassRegistry())
    assert [(entry["event"], entry["log_level"]) for entry in logs] == [(event, "error")]
    assert logs[0]["name"] == name


def test_loader_never_configures_structlog(tmp_path: Path) -> None:
    """Loading leaves structlog's global configuration as it was."""
    before = structlog.get_config()
    load_task_class("foo", make_bench(tmp_path, "foo").root, registry=TaskClassRegistry())
    assert structlog.get_config() == before


def test_docstring_states_the_caller_serialized_contract() -> None:
    """The docstring says 'caller-serialized' and names Runner.plan (AC-20)."""
    doc = inspect.getdoc(load_task_class)
    assert doc is not None
    assert "caller-serialized" in doc
    assert "Runner.plan" in doc


def test_errors_from_a_load_survive_pickling(tmp_path: Path) -> None:
    """A TaskClassRegistrationFailed keeps its attributes across pickle."""
    bench = make_bench(tmp_path, "foo", before="raise RuntimeError('boom')")
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    copy = pickle.loads(pickle.dumps(exc.value))
    assert copy.attributes() == exc.value.attributes()


def test_registration_module_may_pass_its_own_registry(tmp_path: Path) -> None:
    """A registration naming a registry explicitly registers there; the load still succeeds."""
    source = textwrap.dedent(
        """
        from codegenie.eval.registry import TaskClassRegistry, register_task_class
        PRIVATE = TaskClassRegistry()

        @register_task_class("foo")
        class Foo:
            pass

        @register_task_class("foo", registry=PRIVATE)
        class Other:
            pass
        """
    )
    bench = Bench(tmp_path)
    bench.add("foo", source=source)
    registry = TaskClassRegistry()
    task_class = load_task_class("foo", bench.root, registry=registry)
    assert task_class.cls.__name__ == "Foo"
    assert registry.names() == ("foo",)


def test_register_task_class_outside_a_load_uses_default_registry(
    default_registry: TaskClassRegistry,
) -> None:
    """A decoration outside any load goes to default_registry."""

    @register_task_class("adhoc")
    class Adhoc:
        pass

    assert default_registry.get("adhoc").cls is Adhoc


def test_repeat_request_into_another_registry_registers_the_same_object(tmp_path: Path) -> None:
    """A repeat of a loaded request with another registry still adds the task class there."""
    bench = make_bench(tmp_path, "foo")
    first, second = TaskClassRegistry(), TaskClassRegistry()
    task_class = load_task_class("foo", bench.root, registry=first)
    assert load_task_class("foo", bench.root, registry=first) is task_class
    assert load_task_class("foo", bench.root, registry=second) is task_class
    assert second.get("foo") is task_class


def test_repeat_request_after_the_module_was_removed_imports_again(tmp_path: Path) -> None:
    """Removing the module from sys.modules makes the loader forget the earlier load."""
    log = tmp_path / "side_effects.txt"
    bench = make_bench(tmp_path, "foo", log=log)
    load_task_class("foo", bench.root, registry=TaskClassRegistry())
    for key in [k for k in sys.modules if k == "bench" or k.startswith("bench.")]:
        del sys.modules[key]
    again = load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert again.name == "foo"
    assert log.read_text().count("x\n") == 2


def test_repeat_request_with_another_manifest_argument_is_checked_again(tmp_path: Path) -> None:
    """A repeat passing a different manifest= goes through the checks against that manifest."""
    bench = make_bench(tmp_path, "foo")
    registry = TaskClassRegistry()
    load_task_class("foo", bench.root, registry=registry)
    other = BenchManifest.from_bytes(b"schema-version = 1\n", bench.manifest)
    with pytest.raises(TaskClassNotFound):
        load_task_class("foo", bench.root, registry=registry, manifest=other)


def test_without_structlog_imported_the_loader_neither_logs_nor_imports_it(tmp_path: Path) -> None:
    """In a process that never imported structlog, loading costs no structlog import and prints nothing."""
    bench = make_bench(tmp_path, "foo")
    code = (
        "import sys\n"
        "from codegenie.eval.loader import load_task_class\n"
        f"load_task_class('foo', {str(bench.root)!r})\n"
        "assert 'structlog' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == ""
