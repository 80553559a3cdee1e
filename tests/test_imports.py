"""codegenie.eval._imports: the helpers the loader and check's workers share."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval._imports import (
    ImportScope,
    Shadow,
    describe_exception,
    find_shadow,
    forget_path_entry,
    is_not_found,
    put_first_on_sys_path,
)

# -- describe_exception ------------------------------------------------------------


class _StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


class _StrNotString(Exception):
    def __str__(self) -> Any:
        return 42  # noqa: PLE0307 - the point of the test


class _Sneaky(str):
    def upper(self) -> str:
        raise RuntimeError("surprise")


class _StrSubclass(Exception):
    def __str__(self) -> str:
        return _Sneaky("sneaky")


class _Unrepresentable:
    def __repr__(self) -> str:
        raise ValueError("no repr")


class _LyingMeta(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("no name")


class _Lying(Exception, metaclass=_LyingMeta):
    pass


class _StrInterrupts(Exception):
    def __str__(self) -> str:
        raise KeyboardInterrupt


DESCRIPTIONS = [
    pytest.param(ValueError("bad value"), ("ValueError", "bad value"), id="plain"),
    pytest.param(GeneratorExit(), ("GeneratorExit", ""), id="generator-exit"),
    pytest.param(SystemExit(2), ("SystemExit", "the registration called sys.exit(2)"), id="exit"),
    pytest.param(
        SystemExit(), ("SystemExit", "the registration called sys.exit(None)"), id="exit-none"
    ),
    pytest.param(
        SystemExit(_Unrepresentable()),
        ("SystemExit", "the registration called sys.exit(<unprintable _Unrepresentable object>)"),
        id="exit-code-repr-raises",
    ),
    pytest.param(_StrRaises(), ("_StrRaises", "<unprintable _StrRaises object>"), id="str-raises"),
    pytest.param(
        _StrNotString(), ("_StrNotString", "<unprintable _StrNotString object>"), id="str-not-str"
    ),
    pytest.param(_StrSubclass(), ("_StrSubclass", "sneaky"), id="str-subclass"),
    pytest.param(_Lying("text"), ("_Lying", "text"), id="metaclass-name-raises"),
]


@pytest.mark.parametrize(("exc", "expected"), DESCRIPTIONS)
def test_describe_exception_never_fails_and_falls_back_like_traceback(
    exc: BaseException, expected: tuple[str, str]
) -> None:
    """describe_exception returns (type name, message), <unprintable X object> when text fails."""
    name, message = describe_exception(exc)
    assert (name, message) == expected
    assert type(name) is str
    assert type(message) is str


def test_describe_exception_lets_keyboard_interrupt_through() -> None:
    """A KeyboardInterrupt raised while formatting is not swallowed."""
    with pytest.raises(KeyboardInterrupt):
        describe_exception(_StrInterrupts())


def test_is_not_found_tells_the_module_itself_from_a_missing_dependency() -> None:
    """Only a ModuleNotFoundError naming the module or a parent counts as 'not found'."""
    assert is_not_found(ModuleNotFoundError("x", name="bench"), "bench.foo.registration")
    assert is_not_found(ModuleNotFoundError("x", name="bench.foo"), "bench.foo.registration")
    assert not is_not_found(ModuleNotFoundError("x", name="yaml"), "bench.foo.registration")
    assert not is_not_found(ModuleNotFoundError("x", name="bench.foobar"), "bench.foo.registration")
    assert not is_not_found(ImportError("x", name="bench"), "bench.foo.registration")


# -- find_shadow ------------------------------------------------------------------------


def _tree(base: Path) -> tuple[str, str]:
    """A namespace root base/bench with bench/foo/registration.py; return (entry, file)."""
    file = base / "bench" / "foo" / "registration.py"
    file.parent.mkdir(parents=True)
    file.write_text("")
    return str(base), str(file)


def test_find_shadow_is_none_for_a_plain_namespace_root(tmp_path: Path) -> None:
    """Nothing shadows a namespace root with the expected file."""
    entry, file = _tree(tmp_path)
    put_first_on_sys_path(entry)
    assert find_shadow("bench.foo.registration", entry, file) is None


def test_find_shadow_names_a_module_file_beside_the_root(tmp_path: Path) -> None:
    """A bench.py beside bench/ is what the import would run."""
    entry, file = _tree(tmp_path)
    (tmp_path / "bench.py").write_text("")
    put_first_on_sys_path(entry)
    assert find_shadow("bench.foo.registration", entry, file) == Shadow(
        "bench", str(tmp_path / "bench.py")
    )


def test_find_shadow_without_the_entry_on_sys_path_still_looks_there_first(
    tmp_path: Path,
) -> None:
    """For a root package not imported yet, path_entry is searched first whatever sys.path holds."""
    entry, file = _tree(tmp_path)
    (tmp_path / "bench.py").write_text("")
    assert find_shadow("bench.foo.registration", entry, file) == Shadow(
        "bench", str(tmp_path / "bench.py")
    )


def test_find_shadow_reports_an_imported_root_module_with_no_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 'bench' module made by hand (no file, not a package) shadows the root, without a file."""
    entry, file = _tree(tmp_path)
    other = types.ModuleType("bench")
    monkeypatch.setitem(sys.modules, "bench", other)
    assert find_shadow("bench.foo.registration", entry, file) == Shadow("bench", None)


# -- ImportScope and sys.path -------------------------------------------------------------


def test_scope_undo_is_idempotent_and_may_follow_keep(tmp_path: Path) -> None:
    """undo() after keep() takes the import back; a second undo() changes nothing."""
    entry, _ = _tree(tmp_path)
    path_before, modules_before = list(sys.path), set(sys.modules)
    scope = ImportScope(str(tmp_path / "bench"))
    scope.open(entry)
    __import__("bench.foo.registration")
    scope.keep()
    assert "bench.foo.registration" in scope.added()
    scope.undo()
    scope.undo()
    assert sys.path == path_before
    assert set(sys.modules) == modules_before


def test_forget_path_entry_drops_the_entry_and_its_cached_finders(tmp_path: Path) -> None:
    """forget_path_entry removes the entry from sys.path and the finders cached for it and below."""
    entry, _ = _tree(tmp_path)
    sys.path.insert(0, entry)
    __import__("bench.foo.registration")
    assert any(str(key).startswith(entry) for key in sys.path_importer_cache)
    forget_path_entry(entry)
    assert entry not in sys.path
    assert not any(str(key).startswith(entry) for key in sys.path_importer_cache)
