"""A manifest served from the cache of validated manifests: indistinguishable, never stale."""

from __future__ import annotations

import copy
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from codegenie.eval import BenchManifest, TaskClassRegistry
from codegenie.eval._cache import directory as cache_directory
from codegenie.eval._cache import entry as _cache
from codegenie.eval._cache import memo as manifest_module
from codegenie.eval._cache import served as served_module
from codegenie.eval._cache import store as _cache_store
from codegenie.eval._cache.served import ServedManifest
from codegenie.eval._manifest import model as model_module
from codegenie.eval._manifest.read import read_manifest
from codegenie.eval.cli import main
from codegenie.eval.errors import BenchManifestInvalid, EvalError, TaskClassNotFound
from codegenie.eval.loader import load_task_class
from codegenie.eval.manifest import clear_manifest_cache, load_manifest_cached

from .factory import Bench, make_bench

SLUGS = ("alpha", "beta-two", "gamma", "delta-x", "eps-silon")


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return make_bench(tmp_path, *SLUGS)


def served(path: Path) -> ServedManifest:
    """Return the manifest at ``path`` as a fresh process gets it: from the cache (filled first)."""
    load_manifest_cached(str(path))
    clear_manifest_cache()
    manifest = load_manifest_cached(str(path))
    assert isinstance(manifest, ServedManifest), "not served from the cache"
    assert manifest.served is not None, "not served from the cache"
    return manifest


def refuse_validation(
    monkeypatch: pytest.MonkeyPatch, refuse: Callable[[bytes, Path], BenchManifest]
) -> None:
    """Make every validation of manifest bytes call ``refuse``."""
    for module in (manifest_module, model_module, served_module):
        monkeypatch.setattr(module, "parse_manifest", refuse)


def built(manifest: BenchManifest) -> bool:
    """Whether the manifest's ``task_classes`` mapping has been built."""
    return "task_classes" in served_module._INSTANCE_DICT.__get__(manifest)


KEYS: list[tuple[str | int, ...]] = [
    (),
    ("schema-version",),
    ("schema-version", "x"),
    ("task-classes",),
    ("task-classes", "nope"),
    ("task-classes", "nope", "module"),
    ("unknown",),
    (0,),
    *[("task-classes", slug) for slug in SLUGS],
    *[("task-classes", slug, "module") for slug in SLUGS],
    *[("task-classes", slug, "root") for slug in SLUGS],
    *[("task-classes", slug, "root", 0) for slug in SLUGS],
    *[("task-classes", slug, "other") for slug in SLUGS],
]


def test_a_manifest_from_the_cache_equals_the_validated_one(bench: Bench) -> None:
    """Equality, path, slugs, entries, iteration, positions, dumps and repr: all the same."""
    cached, validated = served(bench.manifest), BenchManifest.load(bench.manifest)
    assert cached.path == validated.path
    assert cached.slugs() == validated.slugs() == SLUGS
    for slug in SLUGS:
        assert slug in cached
        assert cached.entry(slug) == validated.entry(slug)
        assert cached.root_dir(slug) == validated.root_dir(slug)
    assert "nope" not in cached
    for key in KEYS:
        assert cached.position(*key) == validated.position(*key), key
    assert not built(cached)
    assert 3 not in cached
    assert 3 not in validated
    assert cached == validated
    assert validated == cached
    assert list(cached) == list(validated)
    assert cached.model_dump() == validated.model_dump()
    assert cached.model_dump_json() == validated.model_dump_json()
    assert cached.to_toml() == validated.to_toml()
    assert repr(cached) == repr(validated)
    assert cached.model_fields_set == validated.model_fields_set
    assert cached.schema_version == validated.schema_version


def test_two_manifests_of_the_same_bytes_from_the_cache_are_equal_without_being_built(
    bench: Bench,
) -> None:
    """Equality between two cached manifests of the same bytes builds neither."""
    first = served(bench.manifest)
    second = served(bench.manifest)
    assert first is not second
    assert first == second
    assert not built(first)
    assert not built(second)


def test_manifests_of_another_path_or_content_are_not_equal(bench: Bench, tmp_path: Path) -> None:
    """The path is part of a manifest's identity; so are its entries."""
    other = tmp_path / "elsewhere" / "bench.toml"
    other.parent.mkdir()
    other.write_bytes(bench.manifest.read_bytes())
    assert served(bench.manifest) != served(other)
    assert served(bench.manifest) != BenchManifest.load(other)
    shorter = tmp_path / "shorter" / "bench.toml"
    shorter.parent.mkdir()
    shorter.write_bytes(bench.manifest.read_bytes().replace(b"[task-classes.alpha]", b"[x]"))
    assert served(bench.manifest) != BenchManifest.trusted(bench.manifest, {})


def test_a_manifest_from_the_cache_is_unhashable_like_a_validated_one(bench: Bench) -> None:
    """Neither kind is a dictionary key (a mapping of entries is not hashable)."""
    for manifest in (served(bench.manifest), BenchManifest.load(bench.manifest)):
        with pytest.raises(TypeError):
            hash(manifest)


def test_one_slug_is_answered_from_one_block_without_building_the_mapping(bench: Bench) -> None:
    """entry(), `in`, root_dir() and position() of one slug read one block and build nothing."""
    manifest = served(bench.manifest)
    manifest.entry("gamma")
    manifest.root_dir("gamma")
    manifest.position("task-classes", "gamma", "module")
    assert "gamma" in manifest
    assert not built(manifest)
    assert manifest.served is not None
    assert len(manifest.served.entry._blocks) == 1
    assert list(manifest.served.made) == ["gamma"]


def test_entries_keep_their_identity_however_they_are_reached(bench: Bench) -> None:
    """entry(slug) is task_classes[slug] is what iteration yields, as for a validated manifest."""
    manifest = served(bench.manifest)
    early = manifest.entry("beta-two")
    assert manifest.task_classes["beta-two"] is early
    assert dict(manifest)["beta-two"] is early
    assert manifest.entry("beta-two") is early
    assert list(manifest.task_classes) == list(SLUGS)


@pytest.mark.parametrize(
    "action",
    [
        lambda m: m.task_classes,
        lambda m: m.__dict__,
        vars,
        list,
        lambda m: m.model_dump(),
        repr,
        lambda m: m == BenchManifest.load(m.path),
    ],
)
def test_whatever_needs_every_entry_builds_them_all(
    bench: Bench, action: Callable[[BenchManifest], object]
) -> None:
    """Each way of reaching the whole mapping builds it first, then sees all of it."""
    manifest = served(bench.manifest)
    action(manifest)
    assert built(manifest)
    assert manifest.task_classes == BenchManifest.load(bench.manifest).task_classes


@pytest.mark.parametrize(
    "duplicate",
    [copy.copy, copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m)), lambda m: m.model_copy()],
)
def test_copies_and_pickles_equal_the_validated_manifest(
    bench: Bench, duplicate: Callable[[BenchManifest], BenchManifest]
) -> None:
    """A copy or a pickled round trip of a cached manifest says what the validated one says."""
    validated = BenchManifest.load(bench.manifest)
    again = duplicate(served(bench.manifest))
    assert again == validated
    assert again.slugs() == validated.slugs()
    for key in KEYS:
        assert again.position(*key) == validated.position(*key), key


def test_serializers_of_an_enclosing_model_see_every_entry(bench: Bench) -> None:
    """pydantic-core, serializing a cached manifest inside a list, sees what validation gives."""
    adapter = TypeAdapter(list[BenchManifest])
    validated = BenchManifest.load(bench.manifest)
    assert adapter.dump_python([served(bench.manifest)]) == adapter.dump_python([validated])
    assert adapter.dump_json([served(bench.manifest)]) == adapter.dump_json([validated])


def test_model_copy_with_an_update_answers_from_the_update(bench: Bench) -> None:
    """A copy whose entries were replaced never answers from the original's cache entry."""
    manifest = served(bench.manifest)
    entry = manifest.entry("alpha")
    changed = manifest.model_copy(update={"task_classes": {"alpha": entry}})
    assert changed.slugs() == ("alpha",)
    assert "gamma" not in changed
    with pytest.raises(TaskClassNotFound):
        changed.entry("gamma")


@pytest.mark.parametrize("typo", ["alpah", "beta_two", "gama", "zzzzzz", "delta-x-"])
def test_suggestions_are_the_same_either_way(bench: Bench, typo: str) -> None:
    """An unknown slug raises the same TaskClassNotFound, suggestions included."""
    errors = []
    for manifest in (served(bench.manifest), BenchManifest.load(bench.manifest)):
        with pytest.raises(TaskClassNotFound) as caught:
            manifest.entry(typo)
        errors.append(caught.value.attributes())
    assert errors[0] == errors[1]


@pytest.mark.parametrize("count", [65, 300])
def test_suggestions_from_the_bigram_index_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """With the bigram index (large manifests), suggestions are exactly closest()'s."""
    monkeypatch.setattr(_cache_store, "GRAMS_FROM", 65)
    slugs = [f"t{i % 7}-{(i * 7919) % 1000:03d}x{i}" for i in range(count)]
    bench = make_bench(tmp_path, *slugs, write=False)
    cached = served(bench.manifest)
    assert cached.served is not None
    assert cached.served.entry.has_grams()
    validated = BenchManifest.load(bench.manifest)
    for typo in ["t3-0001x5", "3t-500x12", "tt-tt", "x", "t1-271x8", "-", "T5-123X9"]:
        answers = []
        for manifest in (cached, validated):
            with pytest.raises(TaskClassNotFound) as caught:
                manifest.entry(typo)
            answers.append(caught.value.suggestions)
        assert answers[0] == answers[1], typo
    assert not built(cached)


def test_an_invalid_manifest_is_never_cached_and_fails_alike(bench: Bench) -> None:
    """Same BenchManifestInvalid, problems and lines, every time; no cache entry is written."""
    bench.manifest.write_text(bench.manifest.read_text() + "oops = 1\n[task-classes.x]\n")
    errors = []
    loads: list[Callable[[], BenchManifest]] = [
        lambda: load_manifest_cached(str(bench.manifest)),
        lambda: load_manifest_cached(str(bench.manifest)),
        lambda: BenchManifest.load(bench.manifest),
    ]
    for load in loads:
        clear_manifest_cache()
        with pytest.raises(BenchManifestInvalid) as caught:
            load()
        errors.append(caught.value.attributes())
    assert errors[0] == errors[1] == errors[2]
    assert _cache.open_entry(_cache.digest(bench.manifest.read_bytes())) is None


def coarse_stat_key(status: os.stat_result) -> tuple[int, ...]:
    """The stat key a file system with one-second timestamps (FAT: two) would give."""
    second = 10**9
    return (
        status.st_ino,
        status.st_dev,
        status.st_size,
        status.st_mtime_ns // second,
        status.st_ctime_ns // second,
    )


def test_an_edit_keeping_size_and_mtime_is_never_served_stale(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits in the same clock tick, of the same size, with the old mtime put back, are all seen."""
    monkeypatch.setattr(manifest_module, "_stat_key", coarse_stat_key)
    path = str(bench.manifest)
    original = bench.manifest.read_bytes()
    status = bench.manifest.stat()
    variants = [original.replace(b"gamma", name) for name in (b"gamme", b"gammo", b"gamma")]
    for _ in range(3):
        for variant in variants:
            with bench.manifest.open("r+b") as file:
                file.write(variant)
            os.utime(bench.manifest, ns=(status.st_atime_ns, status.st_mtime_ns))
            assert bench.manifest.stat().st_size == status.st_size
            slug = variant.split(b"[task-classes.")[3].split(b"]")[0].decode()
            assert slug in load_manifest_cached(path)
            assert load_manifest_cached(path).slugs()[2] == slug


def test_a_settled_file_is_trusted_by_its_stat_until_the_stat_changes(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file unchanged for long is not read again while its stat is the same; a change is seen."""
    path = str(bench.manifest)
    later = os.stat(path).st_ctime + 60

    class Clock:
        @staticmethod
        def time() -> float:
            return later

    monkeypatch.setattr(manifest_module, "time", Clock)
    first = load_manifest_cached(path)
    reads: list[Path] = []
    real_read = read_manifest

    def counting_read(file: Path) -> tuple[bytes, os.stat_result]:
        reads.append(file)
        return real_read(file)

    monkeypatch.setattr(manifest_module, "read_manifest", counting_read)
    assert load_manifest_cached(path) is first
    assert reads == []
    bench.manifest.write_text(bench.manifest.read_text() + "# edited\n")
    assert load_manifest_cached(path) is not first
    assert len(reads) == 1


def test_a_fresh_process_is_served_without_validating(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once cached, load_manifest_cached (after a restart) never validates the manifest again."""
    load_manifest_cached(str(bench.manifest))
    clear_manifest_cache()

    def refuse(data: bytes, path: Path) -> BenchManifest:
        raise AssertionError("validated again")

    refuse_validation(monkeypatch, refuse)
    manifest = load_manifest_cached(str(bench.manifest))
    assert manifest.entry("gamma").module == "bench.gamma.registration"


def test_show_and_plan_are_served_from_the_cache_and_no_cache_validates(
    bench: Bench, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """show and plan answer from the cache; with --no-cache they validate (as before)."""
    manifest = str(bench.manifest)
    assert main(["--manifest", manifest, "show", "gamma"]) == 0
    clear_manifest_cache()
    expected = capsys.readouterr().out

    def refuse(data: bytes, path: Path) -> BenchManifest:
        raise RuntimeError("validated again")

    refuse_validation(monkeypatch, refuse)
    assert main(["--manifest", manifest, "show", "gamma"]) == 0
    assert capsys.readouterr().out == expected
    clear_manifest_cache()
    assert main(["--manifest", manifest, "plan", "gamma", "alpha"]) == 0
    clear_manifest_cache()
    assert main(["--manifest", manifest, "--no-cache", "show", "gamma"]) == 1
    assert "validated again" in capsys.readouterr().err


def test_a_cache_entry_damaged_after_it_was_opened_falls_back_to_validation(bench: Bench) -> None:
    """An entry overwritten in place while a manifest reads from it: the answers stay right."""
    manifest = served(bench.manifest)
    assert manifest.served is not None
    entry = Path(os.environ["XDG_CACHE_HOME"]) / "codegenie-eval" / "manifests"
    [file] = [f for f in entry.iterdir() if f.name.endswith(".cache")]
    blob = bytearray(file.read_bytes())
    blob[-200:] = b"#" * 200  # the sorted blocks and the text are at the end
    with file.open("r+b") as handle:  # in place: the open entry sees it
        handle.write(blob)
    validated = BenchManifest.load(bench.manifest)
    assert manifest.entry("gamma") == validated.entry("gamma")
    assert manifest.entry("eps-silon") == validated.entry("eps-silon")
    assert manifest.position("task-classes", "delta-x", "root") == validated.position(
        "task-classes", "delta-x", "root"
    )
    assert manifest == validated


def test_the_loader_of_a_fresh_process_resolves_from_the_cache(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_task_class without manifest= resolves through the cache: no validation at all."""
    load_manifest_cached(str(bench.manifest))
    clear_manifest_cache()

    def refuse(data: bytes, path: Path) -> BenchManifest:
        raise AssertionError("validated again")

    refuse_validation(monkeypatch, refuse)
    task_class = load_task_class("delta-x", bench.root, registry=TaskClassRegistry())
    assert task_class.module == "bench.delta_x.registration"


# -- the property: the cached path and the uncached path always agree -----------------------

POOL = ("ab-cd", "ab-ce", "xy-zz", "qq-rr", "mm-nn")


#: Optional keys an entry may set, as TOML values (``accept`` over two lines too).
OPTIONAL = {
    "environment": ['"envs/a b.txt"', '"e.txt"'],
    "python": ['"3.12"', '"3.11.2"'],
    "accept": ['["cases-missing"]', "[]", '["cases-missing", "module-convention"]'],
}


def _entry(
    slug: str,
    style: str,
    module: str | None = None,
    root: str = "bench",
    optional: tuple[tuple[str, str], ...] = (),
) -> str:
    module = module or f"bench.{slug.replace('-', '_')}.registration"
    if style == "inline":
        more = "".join(f", {key} = {value}" for key, value in optional)
        return f'task-classes.{slug} = {{ module = "{module}", root = "{root}"{more} }}\n'
    if style == "dotted":
        more = "".join(f"task-classes.{slug}.{key} = {value}\n" for key, value in optional)
        return (
            f'task-classes.{slug}.module = "{module}"\ntask-classes.{slug}.root = "{root}"\n' + more
        )
    header = f'[task-classes."{slug}"]' if style == "quoted" else f"[task-classes.{slug}]"
    indent = "  " if style == "indented" else ""
    # An array of two codes is written over two lines: a value the line reader cannot see whole.
    more = "".join(
        f"{indent}{key} = {value.replace(', ', LINE_BREAK)}\n" for key, value in optional
    )
    return f'{header}\n{indent}module = "{module}"\n{more}{indent}root = "{root}"\n# end {slug}\n\n'


LINE_BREAK = ",\n  "
#: Each entry's optional keys (at most one value per key), in the order they are written.
OPTIONAL_KEYS = st.lists(
    st.sampled_from([(key, value) for key, values in OPTIONAL.items() for value in values]),
    max_size=3,
    unique_by=lambda pair: pair[0],
).map(tuple)


FLAWS = [
    "",
    "unknown-key",
    "bad-module",
    "duplicate-module",
    "schema-version",
    "syntax",
    "bad-utf8",
    "bom",
    "missing-root",
]


@st.composite
def manifest_bytes(draw: st.DrawFn) -> bytes:
    slugs = draw(st.lists(st.sampled_from(POOL), unique=True, max_size=4))
    style = draw(st.sampled_from(["plain", "quoted", "indented", "inline", "dotted"]))
    flaw = draw(st.sampled_from(FLAWS) | st.just(""))
    version = 2 if flaw == "schema-version" else 1
    head = f"#:schema ./docs/bench.schema.json\nschema-version = {version}\n\n"
    optional = [draw(OPTIONAL_KEYS) for _ in slugs]
    body = [
        _entry(slug, "plain" if style in {"inline", "dotted"} else style, optional=keys)
        for slug, keys in zip(slugs, optional, strict=True)
    ]
    if style in {"inline", "dotted"}:
        body = [_entry(slug, style, optional=k) for slug, k in zip(slugs, optional, strict=True)]
    if flaw == "unknown-key" and slugs:
        body.append(f"[task-classes.zz-{draw(st.sampled_from('abc'))}]\nmodul = 1\n")
    if flaw == "bad-module":
        body.append(_entry("ee-ff", "plain", module="bench.class.registration"))
    if flaw == "duplicate-module" and slugs:
        body.append(
            _entry("ee-ff", "plain", module=f"bench.{slugs[0].replace('-', '_')}.registration")
        )
    if flaw == "syntax":
        body.insert(draw(st.integers(0, len(body))), "[task-classes\n")
    if flaw == "missing-root":
        body.append('[task-classes.gg-hh]\nmodule = "bench.gg_hh.registration"\n')
    data = (head + "".join(body)).encode()
    if flaw == "bad-utf8":
        data = data.replace(b"#:schema", b"#:sch\xffma")
    if flaw == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


# An edit: new bytes, or the previous bytes with one byte changed (same size, mtime put back).
EDITS = st.one_of(
    manifest_bytes().map(lambda data: ("write", data)),
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.sampled_from(b"abcxz-._=[]\"'1 \n")),
)


def _summary(manifest: BenchManifest, typo: str) -> tuple[Any, ...]:
    slugs = manifest.slugs()
    try:
        manifest.entry(typo)
        suggestions: Any = None
    except TaskClassNotFound as exc:
        suggestions = exc.attributes()
    return (
        manifest.path,
        manifest.schema_version,
        slugs,
        [(slug, manifest.entry(slug)) for slug in slugs],
        [manifest.position(*key) for key in KEYS],
        [
            manifest.position("task-classes", slug, key)
            for slug in slugs
            for key in ("module", "root", *OPTIONAL)
        ],
        [
            manifest.value_position("task-classes", slug, key)
            for slug in slugs
            for key in ("module", "root", *OPTIONAL)
        ],
        [(slug, manifest.entry(slug).model_fields_set) for slug in slugs],
        suggestions,
    )


def _answer(load: Callable[[], BenchManifest], typo: str) -> tuple[Any, ...]:
    try:
        manifest = load()
    except EvalError as exc:
        return ("error", type(exc), exc.attributes())
    return ("manifest", _summary(manifest, typo))


def _apply(path: Path, edit: tuple[Any, ...]) -> None:
    if edit[0] == "write":
        path.write_bytes(edit[1])
        return
    _, where, byte = edit
    data = bytearray(path.read_bytes())
    if not data:
        return
    status = path.stat()
    data[where % len(data)] = byte
    with path.open("r+b") as file:  # in place, same size
        file.write(data)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(manifest_bytes(), st.lists(EDITS, max_size=5), st.sampled_from(["ab-ce", "ab_cd", "zz"]))
def test_cached_and_uncached_reads_always_agree(
    first: bytes, edits: list[tuple[Any, ...]], typo: str
) -> None:
    """For any manifest and any edits, the cached reads answer exactly what validation answers."""
    clear_manifest_cache()
    # One-second timestamps: edits in the same second keep the stat of the bytes before them.
    with (
        tempfile.TemporaryDirectory() as directory,
        mock.patch.object(manifest_module, "_stat_key", coarse_stat_key),
    ):
        path = Path(directory) / "bench.toml"
        path.write_bytes(first)
        for edit in [None, *edits]:
            if edit is not None:
                _apply(path, edit)
            expected = _answer(lambda: BenchManifest.load(path), typo)
            in_process = _answer(lambda: load_manifest_cached(str(path)), typo)

            def fresh_process() -> BenchManifest:
                clear_manifest_cache()
                return load_manifest_cached(str(path))

            from_cache = _answer(fresh_process, typo)
            event(f"{expected[0]} after {edit[0] if edit else 'first write'}")
            assert in_process == expected
            assert from_cache == expected
            if expected[0] == "manifest":
                assert load_manifest_cached(str(path)) == BenchManifest.load(path)


def _resolve(slug: str, root: Path) -> tuple[Any, ...]:
    try:
        task_class = load_task_class(slug, root, registry=TaskClassRegistry())
    except EvalError as exc:
        return ("error", type(exc), exc.attributes())
    return ("task class", task_class.name, task_class.module, task_class.source)


def _resolve_uncached(slug: str, root: Path) -> tuple[Any, ...]:
    """The loader with no cache at all: every call validates the manifest."""
    clear_manifest_cache()
    with mock.patch.object(cache_directory, "SUPPORTED", False):
        answer = _resolve(slug, root)
    clear_manifest_cache()
    return answer


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    manifest_bytes(),
    st.lists(EDITS, max_size=4),
    st.lists(st.sampled_from([*POOL, "ab_cd", "zz-top"]), min_size=1, max_size=3),
)
def test_the_loader_gives_the_same_answer_from_the_cache_and_from_validation(
    first: bytes, edits: list[tuple[Any, ...]], slugs: list[str]
) -> None:
    """load_task_class through the caches returns the same task class, or the same error."""
    clear_manifest_cache()
    saved_path = list(sys.path)
    try:
        with (
            tempfile.TemporaryDirectory() as directory,
            mock.patch.object(manifest_module, "_stat_key", coarse_stat_key),
        ):
            bench = make_bench(Path(directory), *POOL)
            bench.manifest.write_bytes(first)
            for edit in [None, *edits]:
                if edit is not None:
                    _apply(bench.manifest, edit)
                for slug in slugs:
                    expected = _resolve_uncached(slug, bench.root)
                    event(expected[1].__name__ if expected[0] == "error" else "resolved")
                    assert _resolve(slug, bench.root) == expected  # in-process memo, or the disk
                    clear_manifest_cache()
                    assert _resolve(slug, bench.root) == expected  # the disk cache (a restart)
    finally:
        # Each example is a new bench: forget the last one's imports (as conftest does per test).
        sys.path[:] = saved_path
        for name in [name for name in sys.modules if name == "bench" or name.startswith("bench.")]:
            del sys.modules[name]


def test_reporting_a_slug_reads_one_entry_and_says_the_same(bench: Bench) -> None:
    """A failing slug's diagnostics come from its own entry: the mapping is never built.

    ``show`` with a typo at 100,000 slugs took 0.76 s when reporting built
    every entry; the words and places are those of a validated manifest.
    """
    from codegenie.eval.problems import error_diagnostics

    bench.add("wrong-name", register="other-name")
    validated = BenchManifest.load(bench.manifest)
    manifest = served(bench.manifest)
    found = []
    for source in (manifest, validated):
        with pytest.raises(TaskClassNotFound) as typo:
            source.entry("gamm")
        with pytest.raises(TaskClassNotFound) as unregistered:
            load_task_class("wrong-name", bench.root, registry=TaskClassRegistry(), manifest=source)
        found.append(
            [
                error_diagnostics(typo.value, source, "gamm"),
                error_diagnostics(unregistered.value, source, "wrong-name"),
            ]
        )
    assert found[0] == found[1]
    assert found[0][1][0].code == "not-registered"
    assert not built(manifest)


# -- entries that set environment, python, accept: served like any other ---------------------

OPTIONAL_TEXT = (
    'environment = "envs/np task.txt"\npython = "3.12"\n'
    'accept = ["cases-missing", "module-convention"]\n'
)


def _with_optional_keys(bench: Bench) -> None:
    """Give 'gamma' every optional key, and 'alpha' an empty accept (set, yet empty)."""
    text = bench.manifest.read_text()
    text = text.replace('root = "bench"\n', 'root = "bench"\n' + OPTIONAL_TEXT, 1)
    text = text.replace(
        '[task-classes.gamma]\nmodule = "bench.gamma.registration"\nroot = "bench"\n',
        '[task-classes.gamma]\nmodule = "bench.gamma.registration"\nroot = "bench"\n'
        + OPTIONAL_TEXT,
    )
    text = text.replace(
        '[task-classes.delta-x]\nmodule = "bench.delta_x.registration"\n',
        '[task-classes.delta-x]\naccept = []\nmodule = "bench.delta_x.registration"\n',
    )
    bench.manifest.write_text(text)


def test_a_manifest_setting_environment_python_or_accept_is_served_and_equal(bench: Bench) -> None:
    """The cache keeps every key an entry sets: served, the manifest is the validated one."""
    _with_optional_keys(bench)
    cached, validated = served(bench.manifest), BenchManifest.load(bench.manifest)
    assert validated.entry("gamma").environment == "envs/np task.txt"
    assert validated.entry("delta-x").model_fields_set == {"module", "root", "accept"}
    for slug in SLUGS:
        mine, theirs = cached.entry(slug), validated.entry(slug)
        assert mine == theirs
        assert mine.model_fields_set == theirs.model_fields_set
        assert repr(mine) == repr(theirs)
        for key in ("module", "root", "environment", "python", "accept", "nothing"):
            at = ("task-classes", slug, key)
            assert cached.position(*at) == validated.position(*at), at
            assert cached.value_position(*at) == validated.value_position(*at), at
        assert cached.position("task-classes", slug, "accept", 1) == validated.position(
            "task-classes", slug, "accept", 1
        )
    assert not built(cached)
    assert cached == validated
    assert cached.model_dump_json() == validated.model_dump_json()
    assert cached.to_toml() == validated.to_toml()
    unpickled = pickle.loads(pickle.dumps(cached))
    assert unpickled == validated
    deep: list[tuple[str | int, ...]] = [
        ("task-classes", "gamma", "accept", 1),
        ("task-classes", "gamma", "python"),
    ]
    for path in deep:
        assert unpickled.position(*path) == validated.position(*path)


def _console(bench: Bench, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the installed console script in the bench; return it and the modules it imported."""
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    done = subprocess.run(
        [script, *args],
        cwd=bench.base,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"},
    )
    imported = {
        line.split("|")[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done, imported


@pytest.mark.parametrize("args", [("list",), ("--format", "json", "list")])
def test_list_of_a_manifest_declaring_environments_is_served_from_the_cache(
    bench: Bench, args: tuple[str, ...]
) -> None:
    """The second `list` imports no pydantic (the cache answered) and prints what validation does."""
    _with_optional_keys(bench)
    fresh, _ = _console(bench, "--no-cache", *args)
    first, imported_first = _console(bench, *args)
    second, imported_second = _console(bench, *args)
    assert fresh.returncode == first.returncode == second.returncode == 0, second.stderr
    assert fresh.stdout == first.stdout == second.stdout
    assert "gamma" in second.stdout
    assert "pydantic" in imported_first
    assert "pydantic" not in imported_second


def test_show_of_a_slug_with_an_environment_is_served_without_validating(
    bench: Bench, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`show gamma` (environment, python, accept) answers from the cache as validation would."""
    _with_optional_keys(bench)
    manifest = str(bench.manifest)
    assert main(["--manifest", manifest, "--no-cache", "--format", "json", "show", "gamma"]) == 0
    expected = capsys.readouterr().out
    assert main(["--manifest", manifest, "list"]) == 0  # fills the cache
    clear_manifest_cache()
    capsys.readouterr()

    def refuse(data: bytes, path: Path) -> BenchManifest:
        raise AssertionError("validated again")

    refuse_validation(monkeypatch, refuse)
    assert main(["--manifest", manifest, "--format", "json", "show", "gamma"]) == 0
    assert capsys.readouterr().out == expected
