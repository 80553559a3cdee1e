"""load_task_class against hostile code and trees (docs/security.md; issues 8 and 9).

Whatever a registration raises becomes a typed error; code the manifest did
not name — a ``bench.py`` beside ``bench/``, a regular ``bench`` package on
``sys.path``, a root reached through a symbolic link leading out of the
manifest's directory — never runs.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import importlib.machinery
import importlib.util
import pickle
import sys
import textwrap
import types
from collections.abc import Sequence
from pathlib import Path

import pytest

from codegenie.eval import BenchManifest, Runner, TaskClassRegistry
from codegenie.eval.errors import (
    BenchRootOutsideManifest,
    RunPlanError,
    TaskClassModuleMismatch,
    TaskClassRegistrationFailed,
)
from codegenie.eval.loader import load_task_class

from .factory import Bench, make_bench

# -- whatever a registration raises ----------------------------------------------

HOSTILE_RAISES = [
    pytest.param(
        "import sys\nsys.exit(3)",
        "SystemExit",
        "the registration called sys.exit(3)",
        id="sys-exit",
    ),
    pytest.param(
        """
        import sys
        class Code:
            def __repr__(self):
                raise RuntimeError("no repr")
        sys.exit(Code())
        """,
        "SystemExit",
        "the registration called sys.exit(<unprintable Code object>)",
        id="sys-exit-code-repr-raises",
    ),
    pytest.param(
        """
        class Exit(SystemExit):
            @property
            def code(self):
                raise RuntimeError("no code")
        raise Exit()
        """,
        "Exit",
        "the registration called sys.exit(<unprintable Exit object>)",
        id="sys-exit-code-property-raises",
    ),
    pytest.param("raise GeneratorExit('closing')", "GeneratorExit", "closing", id="generator-exit"),
    pytest.param(
        "class Custom(BaseException):\n    pass\nraise Custom('custom base')",
        "Custom",
        "custom base",
        id="custom-base-exception",
    ),
    pytest.param(
        """
        class Bad(Exception):
            def __str__(self):
                raise RuntimeError("no str")
        raise Bad()
        """,
        "Bad",
        "<unprintable Bad object>",
        id="str-raises",
    ),
    pytest.param(
        """
        class Bad(Exception):
            def __str__(self):
                return 42
        raise Bad()
        """,
        "Bad",
        "<unprintable Bad object>",
        id="str-returns-non-string",
    ),
    pytest.param(
        """
        class Bad(Exception):
            def __str__(self):
                raise SystemExit(1)
        raise Bad()
        """,
        "Bad",
        "<unprintable Bad object>",
        id="str-raises-system-exit",
    ),
    pytest.param(
        """
        class Bad(Exception):
            def __repr__(self):
                raise RuntimeError("no repr")
        raise Bad("plain message")
        """,
        "Bad",
        "plain message",
        id="repr-raises",
    ),
    pytest.param(
        """
        class Bad(BaseException):
            def __str__(self):
                raise ValueError
            def __repr__(self):
                raise ValueError
        raise Bad()
        """,
        "Bad",
        "<unprintable Bad object>",
        id="base-exception-str-and-repr-raise",
    ),
    pytest.param(
        """
        class Sneaky(str):
            def __getitem__(self, key):
                raise RuntimeError("sliced")
        class Bad(Exception):
            def __str__(self):
                return Sneaky("sneaky text")
        raise Bad()
        """,
        "Bad",
        "sneaky text",
        id="str-returns-str-subclass",
    ),
    pytest.param(
        """
        class Bad(Exception):
            @property
            def __class__(self):
                raise RuntimeError("no class")
        raise Bad("masked class")
        """,
        "Bad",
        "masked class",
        id="class-attribute-raises",
    ),
    pytest.param(
        "def f():\n    f()\nf()",
        "RecursionError",
        "maximum recursion depth exceeded",
        id="recursion",
    ),
]


@pytest.mark.parametrize(("source", "cause_type", "message"), HOSTILE_RAISES)
def test_anything_a_registration_raises_is_a_typed_failure(
    source: str, cause_type: str, message: str, tmp_path: Path
) -> None:
    """Any BaseException but KeyboardInterrupt becomes TaskClassRegistrationFailed, undone and chained."""
    bench = make_bench(tmp_path, "foo", before=textwrap.dedent(source))
    registry = TaskClassRegistry()
    path_before, modules_before = list(sys.path), set(sys.modules)
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=registry)
    assert exc.value.cause_type == cause_type
    assert exc.value.cause_message.startswith(message)
    assert type(exc.value.__cause__).__name__ == cause_type
    assert type(exc.value.cause_message) is str
    assert len(registry) == 0
    assert sys.path == path_before
    assert set(sys.modules) == modules_before
    assert pickle.loads(pickle.dumps(exc.value)).attributes() == exc.value.attributes()


def test_keyboard_interrupt_subclass_passes_through_unchanged(tmp_path: Path) -> None:
    """A KeyboardInterrupt subclass is still an interrupt: undone, then re-raised as the same object."""
    bench = make_bench(
        tmp_path,
        "foo",
        before="""
            class Interrupt(KeyboardInterrupt):
                pass
            raise Interrupt("stop")
        """,
    )
    path_before, modules_before = list(sys.path), set(sys.modules)
    with pytest.raises(KeyboardInterrupt) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert type(exc.value).__name__ == "Interrupt"
    assert exc.value.__cause__ is None
    assert sys.path == path_before
    assert set(sys.modules) == modules_before


def test_a_fixed_registration_loads_after_a_hostile_failure(tmp_path: Path) -> None:
    """After a SystemExit subclass with an unprintable code, fixing the file and retrying works."""
    bench = make_bench(
        tmp_path,
        "foo",
        before="""
            class Exit(SystemExit):
                def __str__(self):
                    raise RuntimeError
            raise Exit(object())
        """,
    )
    registry = TaskClassRegistry()
    with pytest.raises(TaskClassRegistrationFailed):
        load_task_class("foo", bench.root, registry=registry)
    bench.add("foo", after="# fixed: no longer exits, and a different size")
    assert load_task_class("foo", bench.root, registry=registry) is registry.get("foo")


def test_plan_records_every_hostile_failure_and_resolves_the_rest(tmp_path: Path) -> None:
    """Runner.plan keeps going past each hostile registration and reports them all, typed."""
    bench = make_bench(tmp_path, "good-one")
    bench.add("exits", before="import sys\nsys.exit(2)")
    bench.add("closes", before="raise GeneratorExit")
    bench.add("custom", before="class Custom(BaseException):\n    pass\nraise Custom()")
    bench.add(
        "unprintable",
        before="class Bad(Exception):\n    def __str__(self):\n        return None\nraise Bad()",
    )
    bench.add("good-two")
    registry = TaskClassRegistry()
    runner = Runner(BenchManifest.load(bench.manifest), registry=registry)
    with pytest.raises(RunPlanError) as exc:
        asyncio.run(runner.plan())
    assert list(exc.value.errors) == ["exits", "closes", "custom", "unprintable"]
    assert all(isinstance(e, TaskClassRegistrationFailed) for e in exc.value.errors.values())
    assert [tc.name for tc in exc.value.resolved] == ["good-one", "good-two"]
    assert registry.names() == ("good-one", "good-two")
    assert exc.value.exit_code == 1


def test_plan_lets_keyboard_interrupt_through_after_undoing_that_slug(tmp_path: Path) -> None:
    """An interrupt in one registration stops the plan; that slug leaves nothing behind."""
    bench = make_bench(tmp_path, "good-one")
    bench.add("interrupts", before="raise KeyboardInterrupt")
    bench.add("good-two")
    registry = TaskClassRegistry()
    runner = Runner(BenchManifest.load(bench.manifest), registry=registry)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(runner.plan())
    assert registry.names() == ("good-one",)
    assert "bench.interrupts.registration" not in sys.modules


def test_plan_refuses_slugs_that_are_not_strings_before_loading_anything(tmp_path: Path) -> None:
    """A non-str slug (or a bare str for the list) is a TypeError raised before any slug loads."""
    bench = make_bench(tmp_path, "aa", "bb")
    registry = TaskClassRegistry()
    runner = Runner(BenchManifest.load(bench.manifest), registry=registry)
    with pytest.raises(TypeError, match="slugs"):
        asyncio.run(runner.plan(["aa", 3]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="slugs"):
        asyncio.run(runner.plan("aa"))
    assert len(registry) == 0


# -- a root outside the manifest's directory ---------------------------------------


def _vendored_bench(tmp_path: Path) -> tuple[Bench, Path, Path]:
    """A project whose root ``vendor`` is a symbolic link to a directory outside it."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "foo").mkdir(parents=True)
    marker = tmp_path / "ran.txt"
    (elsewhere / "foo" / "registration.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from codegenie.eval import register_task_class\n"
        "@register_task_class('foo')\n"
        "class Foo:\n"
        "    pass\n"
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "vendor").symlink_to(elsewhere, target_is_directory=True)
    bench = Bench(project, root_name="vendor")
    bench.add("foo", root="vendor", write=False)
    return bench, elsewhere, marker


def test_symlinked_root_outside_the_manifest_dir_is_refused_before_any_import(
    tmp_path: Path,
) -> None:
    """vendor -> /elsewhere raises BenchRootOutsideManifest; nothing is imported, sys.path untouched."""
    bench, elsewhere, marker = _vendored_bench(tmp_path)
    path_before, modules_before = list(sys.path), set(sys.modules)
    with pytest.raises(BenchRootOutsideManifest) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.bench_root == elsewhere.resolve()
    assert exc.value.manifest_dir == bench.base.resolve()
    assert exc.value.exit_code == 4
    assert exc.value.code == "root-outside"
    assert exc.value.hint
    assert not marker.exists()
    assert sys.path == path_before
    assert set(sys.modules) == modules_before
    assert pickle.loads(pickle.dumps(exc.value)).attributes() == exc.value.attributes()


def test_root_outside_is_refused_with_an_explicit_manifest_and_in_a_plan(tmp_path: Path) -> None:
    """manifest= and Runner.plan refuse the linked-out root the same way (plan exit code 4)."""
    bench, _, marker = _vendored_bench(tmp_path)
    manifest = BenchManifest.load(bench.manifest)
    with pytest.raises(BenchRootOutsideManifest):
        load_task_class("foo", bench.root, registry=TaskClassRegistry(), manifest=manifest)
    with pytest.raises(RunPlanError) as exc:
        asyncio.run(Runner(manifest, registry=TaskClassRegistry()).plan())
    assert isinstance(exc.value.errors["foo"], BenchRootOutsideManifest)
    assert exc.value.exit_code == 4
    assert not marker.exists()


def test_symlinked_root_that_stays_inside_the_manifest_dir_loads(tmp_path: Path) -> None:
    """A root linked to another directory inside the manifest's directory is fine."""
    bench = make_bench(tmp_path / "project", "foo")
    real = bench.base / "real-bench"
    bench.root.rename(real)
    bench.root.symlink_to(real, target_is_directory=True)
    task_class = load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert task_class.source == real.resolve() / "foo" / "registration.py"


# -- code the manifest did not name never runs ----------------------------------------


def _marker_source(marker: Path) -> str:
    return f"open({str(marker)!r}, 'a').write('ran\\n')\n"


def test_bench_py_beside_the_root_is_a_mismatch_and_never_runs(tmp_path: Path) -> None:
    """A bench.py beside bench/ (preferred by the import system) is reported, not executed."""
    bench = make_bench(tmp_path, "foo")
    marker = tmp_path / "ran.txt"
    shadow = tmp_path / "bench.py"
    shadow.write_text(_marker_source(marker))
    path_before = list(sys.path)
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.actual_file == shadow
    assert exc.value.expected_file == bench.root.resolve() / "foo" / "registration.py"
    assert not marker.exists()
    assert "bench" not in sys.modules
    assert sys.path == path_before


def _regular_bench_package(site: Path, marker: Path, *, with_module: bool) -> None:
    package = site / "bench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(_marker_source(marker))
    if with_module:
        (package / "foo").mkdir()
        (package / "foo" / "__init__.py").write_text(_marker_source(marker))
        (package / "foo" / "registration.py").write_text(_marker_source(marker))


@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("with_module", [True, False], ids=["has-module", "lacks-module"])
def test_regular_bench_package_on_sys_path_is_a_mismatch_and_never_runs(
    where: str, with_module: bool, tmp_path: Path
) -> None:
    """A regular 'bench' package anywhere on sys.path wins over the namespace root: reported, not run."""
    bench = make_bench(tmp_path / "repo", "foo")
    site = tmp_path / "site-packages"
    marker = tmp_path / "ran.txt"
    _regular_bench_package(site, marker, with_module=with_module)
    if where == "first":
        sys.path.insert(0, str(site))
    else:
        sys.path.append(str(site))
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    expected_actual = (
        site / "bench" / "foo" / "registration.py"
        if with_module
        else site / "bench" / "__init__.py"
    )
    assert exc.value.actual_file == expected_actual
    assert not marker.exists()
    assert "bench" not in sys.modules


def test_regular_package_of_another_root_below_the_namespace_never_runs(tmp_path: Path) -> None:
    """Another loaded root's regular bench/foo/ package would win over this root's bench/foo/: refused."""
    marker = tmp_path / "ran.txt"
    first = make_bench(tmp_path / "a", "other")
    (first.root / "foo").mkdir()
    (first.root / "foo" / "__init__.py").write_text(_marker_source(marker))
    (first.root / "foo" / "registration.py").write_text(_marker_source(marker))
    registry = TaskClassRegistry()
    load_task_class("other", first.root, registry=registry)
    second = make_bench(tmp_path / "b", "foo")
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("foo", second.root, registry=registry)
    assert exc.value.actual_file == first.root.resolve() / "foo" / "registration.py"
    assert not marker.exists()
    assert "bench.foo" not in sys.modules


class _ClaimingFinder(importlib.abc.MetaPathFinder):
    """An import hook that answers for 'bench' with a file of its own."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "bench":
            return None
        return importlib.util.spec_from_file_location("bench", self.file)


def test_import_hook_claiming_the_root_package_is_a_mismatch_and_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A meta-path hook ahead of the path finder that answers for 'bench' is reported, not run."""
    bench = make_bench(tmp_path / "repo", "foo")
    marker = tmp_path / "ran.txt"
    claimed = tmp_path / "claimed.py"
    claimed.write_text(_marker_source(marker))
    monkeypatch.setattr(sys, "meta_path", [_ClaimingFinder(claimed), *sys.meta_path])
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert exc.value.actual_file == claimed
    assert not marker.exists()


def test_regular_package_at_the_root_itself_is_accepted(tmp_path: Path) -> None:
    """A root with its own __init__.py is the declared root as a regular package: it loads."""
    bench = make_bench(tmp_path, "foo")
    (bench.root / "__init__.py").write_text("")
    task_class = load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert task_class.name == "foo"


def test_module_left_in_sys_modules_from_another_root_is_a_mismatch_without_running(
    tmp_path: Path,
) -> None:
    """A registration module imported from another root is reported by its file; nothing is re-run."""
    log = tmp_path / "side_effects.txt"
    first = make_bench(tmp_path / "a", "foo", log=log)
    registry = TaskClassRegistry()
    load_task_class("foo", first.root, registry=registry)
    second = Bench(tmp_path / "b")
    second.add("other", module="bench.foo.registration", log=log)
    with pytest.raises(TaskClassModuleMismatch) as exc:
        load_task_class("other", second.root, registry=registry)
    assert exc.value.actual_file == first.root.resolve() / "foo" / "registration.py"
    assert log.read_text().count("x\n") == 1
