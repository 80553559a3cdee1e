"""A load either completes or leaves no trace, even when interrupted anywhere (ADR-0002).

A ``KeyboardInterrupt`` is injected at many points of a load by a trace
function that raises at the Nth line event: every line the loader, the
registry and the import helpers run, and a spread of the lines run elsewhere
(the import system's path finders, the registration, pydantic). After each
interrupted attempt, ``sys.path``, ``sys.modules``, the registries and the
loader's records must be exactly as before; after all of them, a clean load
works.

Two kinds of frames are never interrupted, because an exception raised by a
trace function on the implicit ``__exit__`` line of ``with lock:`` leaves the
lock held (a CPython artefact) and the test process would hang on it: the
frozen importlib bootstrap (its module locks) and structlog's printing logger
(events go to ``capture_logs`` instead).

The same artefact on ``with open(...)`` inside the import system's own code
(``SourceFileLoader.get_data``) leaves that file to the garbage collector, which
closes it with a ``ResourceWarning``. That file is the interpreter's, not the
loader's state, so the exercise collects such files itself and ignores that
warning instead of letting it surface in whichever test happens to run next.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from codegenie.eval import TaskClass, TaskClassRegistry, loader
from codegenie.eval import registry as registry_module
from codegenie.eval.errors import (
    EvalError,
    TaskClassModuleMismatch,
    TaskClassRegistrationFailed,
)
from codegenie.eval.loader import load_task_class

from .factory import make_bench

PACKAGE_DIR = str(Path(loader.__file__).resolve().parent)
_LOCKING = frozenset({"<frozen importlib._bootstrap>"})
SPREAD = 120  # interrupts spread over the lines run outside the package, per scenario


@dataclass
class _Interrupter:
    """A trace function that raises KeyboardInterrupt at the Nth counted line event."""

    at: int | None = None
    ours_only: bool = False
    ours: int = 0
    total: int = 0
    fired: bool = field(default=False)

    def __call__(self, frame: types.FrameType, event: str, arg: object) -> Any:
        if event == "line" and frame.f_code.co_filename not in _LOCKING:
            ours = frame.f_code.co_filename.startswith(PACKAGE_DIR)
            self.ours += ours
            self.total += 1
            count = self.ours if self.ours_only else self.total
            if (ours or not self.ours_only) and count == self.at:
                self.fired = True
                raise KeyboardInterrupt  # the tracer is then removed by the interpreter
        return self

    def run(self, call: Callable[[], TaskClass]) -> TaskClass:
        # No garbage collection meanwhile: a collection runs whatever gc callbacks are
        # registered (hypothesis times its collections), at no fixed line, and an interrupt
        # raised in one is lost as "unraisable" instead of reaching the load.
        collecting = gc.isenabled()
        gc.disable()
        sys.settrace(self)
        try:
            return call()
        finally:
            sys.settrace(None)
            if collecting:
                gc.enable()


def _alive(memory: dict[Any, Any]) -> dict[Any, Any]:
    return {key: value for key, value in memory.items() if value.alive()}


def _state(*registries: TaskClassRegistry) -> tuple[object, ...]:
    """Everything a load may change, by identity (dead loader records do not count)."""
    return (
        list(sys.path),
        {name: id(module) for name, module in sys.modules.items()},
        [tuple(map(id, registry.all_task_classes())) for registry in registries],
        {key: id(value) for key, value in _alive(loader._loaded).items()},
        {key: id(value) for key, value in _alive(loader._repeats).items()},
        dict(loader._path_entries),
        registry_module._session.get(),
    )


def _points(counted: _Interrupter) -> Iterator[tuple[int, bool]]:
    """Every line event of the package, and SPREAD events spread over all of them."""
    for at in range(1, counted.ours + 1):
        yield at, True
    step = max(1, counted.total // SPREAD)
    for at in range(1, counted.total + 1, step):
        yield at, False


def _exercise(
    call: Callable[[TaskClassRegistry], TaskClass],
    *,
    expected: type[BaseException] | None,
    reset: Callable[[], None],
    registries: Callable[[], tuple[TaskClassRegistry, ...]] = tuple,
) -> int:
    """Interrupt ``call`` at every point; check the state; return how many attempts were interrupted."""
    with capture_logs(), warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            return _interrupt_everywhere(
                call, expected=expected, reset=reset, registries=registries
            )
        finally:
            gc.collect()  # the import system's files left open by an interrupted ``with``


def _interrupt_everywhere(
    call: Callable[[TaskClassRegistry], TaskClass],
    *,
    expected: type[BaseException] | None,
    reset: Callable[[], None],
    registries: Callable[[], tuple[TaskClassRegistry, ...]],
) -> int:
    counter = _Interrupter()
    outcome = _outcome(counter, call, TaskClassRegistry())
    assert outcome is None if expected is None else isinstance(outcome, expected), outcome
    reset()
    interrupted = 0
    for at, ours_only in _points(counter):
        registry = TaskClassRegistry()
        before = _state(registry, *registries())
        interrupter = _Interrupter(at=at, ours_only=ours_only)
        outcome = _outcome(interrupter, call, registry)
        if outcome is None:
            assert expected is None
            reset()
            continue
        if isinstance(outcome, KeyboardInterrupt):
            assert interrupter.fired
            interrupted += 1
        else:
            assert expected is not None, outcome
            assert isinstance(outcome, expected), outcome
        assert _state(registry, *registries()) == before, (at, ours_only)
    return interrupted


def _outcome(
    interrupter: _Interrupter,
    call: Callable[[TaskClassRegistry], TaskClass],
    registry: TaskClassRegistry,
) -> BaseException | None:
    """Return what ``call`` raised under ``interrupter``, or ``None`` when it returned."""
    try:
        interrupter.run(lambda: call(registry))
    except BaseException as exc:  # every outcome is examined by the caller
        return exc
    return None


@pytest.fixture
def purge() -> Callable[[], None]:
    """Return a function that forgets every bench module and restores sys.path."""
    saved_path = list(sys.path)
    saved = set(sys.modules)

    def reset() -> None:
        sys.path[:] = saved_path
        for name in [name for name in sys.modules if name not in saved]:
            if name == "bench" or name.startswith(("bench.", "benchhelpers")):
                del sys.modules[name]

    return reset


def _warm_up(call: Callable[[], object]) -> None:
    """Run once, so that modules imported lazily on first use do not count as a change."""
    with contextlib.suppress(EvalError):
        call()


def test_interrupted_first_load_leaves_no_trace_and_a_clean_load_works(
    tmp_path: Path, purge: Callable[[], None]
) -> None:
    """An interrupt at any point of a successful first load undoes it completely."""
    bench = make_bench(tmp_path, "foo")
    (bench.root / "foo" / "helper.py").write_text("VALUE = 1\n")
    bench.add("foo", before="import bench.foo.helper")
    _warm_up(lambda: load_task_class("foo", bench.root, registry=TaskClassRegistry()))
    purge()
    interrupted = _exercise(
        lambda registry: load_task_class("foo", bench.root, registry=registry),
        expected=None,
        reset=purge,
    )
    assert interrupted > 200
    registry = TaskClassRegistry()
    assert load_task_class("foo", bench.root, registry=registry) is registry.get("foo")


def test_interrupted_failing_load_leaves_no_trace(
    tmp_path: Path, purge: Callable[[], None]
) -> None:
    """An interrupt anywhere in a failing load (helpers beside and inside the root) undoes it."""
    bench = make_bench(tmp_path, "foo")
    (bench.root / "foo" / "helper.py").write_text("VALUE = 1\n")
    (tmp_path / "benchhelpers.py").write_text("VALUE = 2\n")
    bench.add(
        "foo",
        after="""
            import bench.foo.helper
            import benchhelpers
            raise RuntimeError("not yet")
        """,
    )
    _warm_up(lambda: load_task_class("foo", bench.root, registry=TaskClassRegistry()))
    interrupted = _exercise(
        lambda registry: load_task_class("foo", bench.root, registry=registry),
        expected=TaskClassRegistrationFailed,
        reset=purge,
    )
    assert interrupted > 200
    bench.add("foo", after="import bench.foo.helper\nimport benchhelpers")
    registry = TaskClassRegistry()
    assert load_task_class("foo", bench.root, registry=registry).name == "foo"


def test_interrupted_adoption_into_another_registry_leaves_no_trace(
    tmp_path: Path, purge: Callable[[], None]
) -> None:
    """Handing an already-loaded task class to a second registry is undone when interrupted."""
    bench = make_bench(tmp_path, "foo")
    first = TaskClassRegistry()
    loaded = load_task_class("foo", bench.root, registry=first)
    interrupted = _exercise(
        lambda registry: load_task_class("foo", bench.root, registry=registry),
        expected=None,
        reset=lambda: None,
        registries=lambda: (first,),
    )
    assert interrupted > 20
    second = TaskClassRegistry()
    assert load_task_class("foo", bench.root, registry=second) is loaded
    assert first.get("foo") is loaded


def test_interrupted_shadowed_load_leaves_no_trace(
    tmp_path: Path, purge: Callable[[], None]
) -> None:
    """A load refused for a bench.py beside the root leaves nothing behind when interrupted."""
    bench = make_bench(tmp_path, "foo")
    (tmp_path / "bench.py").write_text("raise SystemExit('must never run')\n")
    _warm_up(lambda: load_task_class("foo", bench.root, registry=TaskClassRegistry()))
    interrupted = _exercise(
        lambda registry: load_task_class("foo", bench.root, registry=registry),
        expected=TaskClassModuleMismatch,
        reset=purge,
    )
    assert interrupted > 50


# -- helpers imported through the bench's sys.path entry -----------------------------


def test_helper_beside_the_root_is_dropped_with_the_failed_load_so_a_fix_is_seen(
    tmp_path: Path,
) -> None:
    """A benchhelpers.py beside bench/ imported by a failed load goes with its sys.path entry."""
    bench = make_bench(tmp_path, "foo", before="import benchhelpers\nbenchhelpers.check()")
    helpers = tmp_path / "benchhelpers.py"
    helpers.write_text("def check():\n    raise RuntimeError('helper broken')\n")
    registry = TaskClassRegistry()
    path_before = list(sys.path)
    with pytest.raises(TaskClassRegistrationFailed) as exc:
        load_task_class("foo", bench.root, registry=registry)
    assert exc.value.cause_message == "helper broken"
    assert "benchhelpers" not in sys.modules
    assert sys.path == path_before

    helpers.write_text("def check():\n    return None  # fixed, and of another size\n")
    assert load_task_class("foo", bench.root, registry=registry).name == "foo"
    assert "benchhelpers" in sys.modules


def test_helper_imported_through_an_entry_that_stays_is_kept(tmp_path: Path) -> None:
    """When the root's parent was on sys.path before the load, undo keeps what came through it."""
    bench = make_bench(tmp_path, "foo", before="import benchhelpers\nraise RuntimeError('x')")
    (tmp_path / "benchhelpers.py").write_text("VALUE = 1\n")
    sys.path.append(str(tmp_path.resolve()))
    with pytest.raises(TaskClassRegistrationFailed):
        load_task_class("foo", bench.root, registry=TaskClassRegistry())
    assert "benchhelpers" in sys.modules


def test_undo_keeps_libraries_from_a_virtual_environment_inside_the_project(
    tmp_path: Path,
) -> None:
    """A library under a more specific sys.path entry inside the project is not the bench's to drop."""
    site = tmp_path / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "venvlib_for_test.py").write_text("VALUE = 1\n")
    sys.path.append(str(site.resolve()))
    bench = make_bench(tmp_path, "foo", before="import venvlib_for_test\nraise RuntimeError('x')")
    try:
        with pytest.raises(TaskClassRegistrationFailed):
            load_task_class("foo", bench.root, registry=TaskClassRegistry())
        assert "venvlib_for_test" in sys.modules
    finally:
        sys.modules.pop("venvlib_for_test", None)
