"""A long-lived process that loads from many roots stays small (ADR-0002, `_loaded` state)."""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

from codegenie.eval import TaskClassRegistry, loader
from codegenie.eval.loader import load_task_class

from .factory import make_bench

ROOTS = 300


def _purge_bench_modules() -> None:
    for name in [n for n in sys.modules if n == "bench" or n.startswith("bench.")]:
        del sys.modules[name]


def test_many_purged_roots_keep_sys_path_the_maps_and_memory_bounded(tmp_path: Path) -> None:
    """Loading from 300 roots, each purged after use, frees their modules and grows nothing."""
    path_length = len(sys.path)
    modules: list[weakref.ref[object]] = []
    for i in range(ROOTS):
        bench = make_bench(tmp_path / f"root{i}", f"task-{i}")
        task_class = load_task_class(f"task-{i}", bench.root, registry=TaskClassRegistry())
        modules.append(weakref.ref(sys.modules[task_class.module]))
        _purge_bench_modules()
        assert len(sys.path) <= path_length + 1
    del task_class
    gc.collect()

    assert len(loader._loaded) <= 64
    assert len(loader._repeats) <= 64
    assert len(loader._path_entries) <= 1
    assert sum(ref() is not None for ref in modules) <= 64
    base = str(tmp_path.resolve())
    finders = [key for key in sys.path_importer_cache if str(key).startswith(base)]
    assert len(finders) <= 8


def test_repeat_requests_are_bounded_even_when_every_module_stays(tmp_path: Path) -> None:
    """Repeat requests kept in memory never exceed the limit; the oldest go first."""
    bench = make_bench(tmp_path, "foo")
    registry = TaskClassRegistry()
    for i in range(loader._REPEATS_LIMIT + 50):
        link = tmp_path / "links" / f"l{i}"
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(bench.root, target_is_directory=True)
        load_task_class("foo", link, registry=registry)
    assert len(loader._repeats) <= loader._REPEATS_LIMIT
    # The most recent request is still answered from memory.
    assert load_task_class("foo", link, registry=registry) is registry.get("foo")


def test_a_root_whose_modules_are_still_loaded_keeps_its_sys_path_entry(tmp_path: Path) -> None:
    """Only entries of roots with nothing loaded left are taken off sys.path."""
    first = make_bench(tmp_path / "a", "foo")
    second = make_bench(tmp_path / "b", "bar")
    third = make_bench(tmp_path / "c", "baz")
    registry = TaskClassRegistry()
    load_task_class("foo", first.root, registry=registry)
    load_task_class("bar", second.root, registry=registry)
    del sys.modules["bench.bar.registration"]  # root b has nothing loaded any more
    load_task_class("baz", third.root, registry=registry)
    assert str(first.base.resolve()) in sys.path
    assert str(second.base.resolve()) not in sys.path
    assert str(third.base.resolve()) == sys.path[0]
    # A module of root a imported later still finds its package through the entry.
    (first.root / "foo" / "late.py").write_text("VALUE = 3\n")
    __import__("bench.foo.late")
    assert sys.modules["bench.foo.late"].VALUE == 3
