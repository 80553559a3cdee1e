"""Isolation shared by every test: the process-wide state the loader touches."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from hypothesis import settings

from codegenie.eval import registry as registry_module
from codegenie.eval.manifest import clear_manifest_cache
from codegenie.eval.registry import TaskClassRegistry

REPO = Path(__file__).resolve().parent.parent

# Properties build real files and import modules: a slow disk or a busy CI
# machine must not turn that into a flaky deadline failure.
settings.register_profile("codegenie", deadline=None)
settings.load_profile("codegenie")

# What a terminal's foreground job has: SIGINT raises KeyboardInterrupt, SIGHUP and
# SIGTERM end the process.
_TERMINAL_DISPOSITIONS: dict[signal.Signals, object] = {
    signal.SIGINT: signal.default_int_handler,
    signal.SIGHUP: signal.SIG_DFL,
    signal.SIGTERM: signal.SIG_DFL,
}


def pytest_configure(config: pytest.Config) -> None:
    """Give the processes tests run in a terminal's dispositions, however the suite started.

    Signal tests start commands (``grade``, ``check``) and signal them as a
    terminal would; a command inherits an ignored signal across ``exec``, so
    under ``nohup`` (SIGHUP ignored) or as a background job of a script
    (SIGINT ignored) it would rightly keep ignoring it, and the test would
    hang on a command that never stops. The processes that run tests (each
    pytest-xdist worker, or pytest itself without workers) put back what a
    signal ignored by their parent does; pytest-xdist's controller keeps
    what it was given, so ``nohup pytest`` still survives its terminal.
    """
    controller = bool(getattr(config.option, "numprocesses", None)) and (
        "PYTEST_XDIST_WORKER" not in os.environ
    )
    if controller:
        return
    for number, disposition in _TERMINAL_DISPOSITIONS.items():
        if signal.getsignal(number) == signal.SIG_IGN:
            signal.signal(number, disposition)  # type: ignore[arg-type]


@pytest.fixture(scope="session", autouse=True)
def _no_run_cgroups_left_behind() -> Iterator[None]:
    """Remove, once the tests are done, the empty run cgroups of processes they killed outright.

    Tests kill harnesses and Ray workers with SIGKILL on purpose; the cgroups
    of the run each was making stay, empty, as they would on any machine.
    Only those made during the session (not there when it began), by a
    process that is gone, are removed; one with a process in it cannot be.
    """
    # Imported here, not at the top: tests look at what importing the package loads.
    from codegenie.eval._process.procfs import running
    from codegenie.eval._sandbox.cgroups import discover

    def run_cgroups() -> set[Path]:
        return {
            directory
            for hierarchy in discover().values()
            for directory in hierarchy.parent.glob("codegenie-run-*-*")
        }

    before = run_cgroups()
    yield
    for directory in run_cgroups() - before:
        creator = directory.name.split("-")[2]
        with contextlib.suppress(OSError, ValueError):
            if not running(int(creator)):
                directory.rmdir()


def _bench_import(module: types.ModuleType | None, test_dirs: tuple[str, ...]) -> bool:
    """Whether ``module`` came from a bench a test built or the shipped bench."""
    files = [getattr(module, "__file__", None), *getattr(module, "__path__", ())]
    files = [str(Path(f).resolve()) for f in files if f]
    name = getattr(module, "__name__", "")
    if name.startswith("codegenie.eval._import_mark"):
        return True
    return bool(files) and all(f.startswith(test_dirs) for f in files)


@pytest.fixture(autouse=True)
def _isolate_eval_globals(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TaskClassRegistry]:
    """Give each test a fresh default registry; restore sys.path and sys.modules after it.

    Task-class modules a test imported (registrations, ``bench`` namespace
    packages, from temporary benches or the shipped one) are removed again,
    so tests run in any order without seeing each other's imports.
    """
    test_dirs = (str(tmp_path_factory.getbasetemp().resolve()), str(REPO / "bench"))
    # The manifest cache of `list` goes to a private directory, never the user's.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    # How output looks is for each test to choose, not for the shell that runs pytest.
    for variable in ("NO_COLOR", "FORCE_COLOR", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(variable, raising=False)
    saved_path = list(sys.path)
    saved_modules = dict(sys.modules)
    fresh = TaskClassRegistry()
    monkeypatch.setattr(registry_module, "default_registry", fresh)
    clear_manifest_cache()
    yield fresh
    structlog.reset_defaults()  # an in-process CLI run configures it
    sys.path[:] = saved_path
    # Decide before deleting: a namespace package's __path__ consults its parent.
    doomed = [
        name
        for name, module in list(sys.modules.items())
        if saved_modules.get(name) is not module and _bench_import(module, test_dirs)
    ]
    for name in doomed:
        del sys.modules[name]
    for name, module in saved_modules.items():
        if sys.modules.get(name) is not module:
            sys.modules[name] = module
    clear_manifest_cache()


@pytest.fixture
def default_registry(_isolate_eval_globals: TaskClassRegistry) -> TaskClassRegistry:
    """The (fresh) default registry the current test runs with."""
    return _isolate_eval_globals


@pytest.fixture
def env_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where this test's task-class environments are kept (``CODEGENIE_ENV_DIR``), not made."""
    directory = tmp_path / "environments"
    monkeypatch.setenv("CODEGENIE_ENV_DIR", str(directory))
    return directory
