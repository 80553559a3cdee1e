"""codegenie.eval._cache.entry: the entry format, one-block lookups, checked sections, the bigram index."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from codegenie.eval._cache import entry as _cache
from codegenie.eval._cache import store as _cache_store
from codegenie.eval._cache.listing import render_text
from codegenie.eval.naming import SHORTLIST_SIZE, shortlist


def cache_root() -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "codegenie-eval" / "manifests"


def make_entry(data: bytes, slugs: list[str]) -> _cache.Entry:
    """Store an entry for ``slugs`` (modules and positions derived from each index) and open it."""
    modules = [f"bench.{slug.replace('-', '_')}.registration" for slug in slugs]
    roots = [f"root{i % 3}/bench" for i in range(len(slugs))]
    positions = [(4 * i + 4, 1, 4 * i + 5, 2, 4 * i + 6, 3) for i in range(len(slugs))]
    _cache_store.store(
        data,
        slugs,
        modules,
        roots,
        positions,
        schema_version=1,
        globals_=((2, 1), (4, 1)),
        text=render_text((slugs, modules, roots)),
    )
    entry = _cache.open_entry(_cache.digest(data))
    assert entry is not None
    return entry


SLUGS = [f"s{(i * 7919) % 1000:03d}-{i}" for i in range(3 * _cache_store.BLOCK_SIZE + 5)]


def test_every_slug_is_found_in_its_block_and_no_other_is() -> None:
    """Across several sorted blocks, each slug's record comes back; unknown slugs are None."""
    entry = make_entry(b"many", SLUGS)
    assert entry.count == len(SLUGS)
    assert entry.slugs() == tuple(SLUGS)
    assert entry.schema_version == 1
    assert entry.globals == ((2, 1), (4, 1))
    for i, slug in enumerate(SLUGS):
        module, root, positions, extras = entry.record(slug) or ("", "", (), ())
        assert extras == ()
        assert module == f"bench.{slug.replace('-', '_')}.registration"
        assert root == f"root{i % 3}/bench"
        assert positions == (4 * i + 4, 1, 4 * i + 5, 2, 4 * i + 6, 3)
    for unknown in ("", "a", "s000", "s500-", "zzz", "s999-99999", "s0"):
        assert entry.record(unknown) is None
    assert len(entry.records()) == len(SLUGS)
    entry.close()


def test_one_lookup_reads_one_block() -> None:
    """A lookup checks and parses the one block that can hold the slug."""
    entry = make_entry(b"many", SLUGS)
    entry.record(SLUGS[100])
    entry.record(SLUGS[100] + "x")
    assert len(entry._blocks) == 1
    entry.close()


def test_the_text_section_is_the_list_output() -> None:
    """text() is render_text of the entries, in file order."""
    slugs = ["zeta", "alpha"]
    entry = make_entry(b"two", slugs)
    records = entry.records()
    modules = [records[slug][0] for slug in slugs]
    roots = [records[slug][1] for slug in slugs]
    assert entry.text() == render_text((slugs, modules, roots)).encode()
    assert entry.text().startswith(b"zeta ")
    entry.close()


def _flip(offset_from_end: int) -> None:
    [file] = [f for f in cache_root().iterdir() if f.name.endswith(".cache")]
    blob = bytearray(file.read_bytes())
    blob[-offset_from_end] ^= 0x01
    with file.open("r+b") as handle:
        handle.write(blob)


def test_a_damaged_section_raises_damaged_when_read() -> None:
    """A flipped byte in a block is found when that block is read, never returned."""
    entry = make_entry(b"many", SLUGS)
    _flip(10)  # the last sorted block
    with pytest.raises(_cache.Damaged):
        entry.record(sorted(SLUGS)[-1])
    assert entry.record(sorted(SLUGS)[0]) is not None  # the other blocks are intact
    entry.close()
    with pytest.raises(_cache.Damaged):
        entry.slugs()


def test_a_damaged_table_of_contents_is_a_miss() -> None:
    """A flipped byte in the header or table of contents: the entry does not open."""
    make_entry(b"few", ["aa", "bb"]).close()
    [file] = [f for f in cache_root().iterdir() if f.name.endswith(".cache")]
    blob = bytearray(file.read_bytes())
    blob[blob.index(b"count ") + 6] ^= 0x01
    file.write_bytes(blob)
    assert _cache.open_entry(_cache.digest(b"few")) is None


def test_an_open_entry_survives_its_file_being_replaced_or_pruned() -> None:
    """Once open, an entry reads its own (immutable) file, whatever happens to the name."""
    entry = make_entry(b"many", SLUGS)
    [file] = [f for f in cache_root().iterdir() if f.name.endswith(".cache")]
    file.unlink()
    file.write_bytes(b"something else entirely")
    assert entry.record(SLUGS[-1]) is not None
    assert entry.slugs() == tuple(SLUGS)
    entry.close()


def test_pruning_keeps_at_most_the_size_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Old entries beyond the byte budget are removed; the newest is always kept."""
    monkeypatch.setattr(_cache_store, "_KEEP_BYTES", 1)
    for n in range(3):
        make_entry(f"manifest {n}".encode(), ["aa", "bb"]).close()
    assert len([f for f in cache_root().iterdir() if f.name.endswith(".cache")]) == 1
    assert _cache.open_entry(_cache.digest(b"manifest 2")) is not None


def test_an_entry_without_slugs_is_not_stored() -> None:
    """Nothing is written for an empty manifest (validating it costs nothing)."""
    _cache_store.store(b"x", [], [], [], [], schema_version=1, globals_=((1, 1), (1, 1)), text="")
    assert _cache.open_entry(_cache.digest(b"x")) is None


# Slugs over three letters share most character pairs (bit sets); slugs over the
# whole alphabet rarely do (lists of indices): pools mix both.
POOL = st.lists(
    st.from_regex(r"[a-c][a-c0-2-]{0,6}[a-c0-2]\Z", fullmatch=True)
    | st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]\Z", fullmatch=True),
    min_size=SHORTLIST_SIZE + 1,
    max_size=400,
    unique=True,
)


@settings(max_examples=60)
@given(POOL, st.text(alphabet="abc012-_xAqz9", max_size=9))
def test_the_bigram_index_shortlists_exactly_as_naming_does(pool: list[str], typo: str) -> None:
    """Entry.shortlist equals naming.shortlist: same names, same order, ties in file order."""
    original = _cache_store.GRAMS_FROM
    _cache_store.GRAMS_FROM = SHORTLIST_SIZE + 1
    try:
        entry = make_entry(("\n".join(pool) + typo).encode(), pool)
    finally:
        _cache_store.GRAMS_FROM = original
    normalized = typo.lower().replace("_", "-")
    assert entry.has_grams()
    assert entry.shortlist(normalized, SHORTLIST_SIZE) == shortlist(normalized, pool)
    kinds = {found[0] for found in (entry._grams or {}).values()}
    event(f"bigram sets: {sorted(kinds)}")
    entry.close()


CORRUPTIONS = st.lists(
    st.tuples(st.sampled_from(["flip", "truncate", "append"]), st.integers(0, 10**6), st.binary()),
    min_size=1,
    max_size=3,
)


@settings(max_examples=150)
@given(CORRUPTIONS)
def test_any_corruption_gives_the_truth_a_miss_or_damaged(
    corruptions: list[tuple[str, int, bytes]],
) -> None:
    """After any damage to an entry, every read is right, a miss, or Damaged: nothing else (property)."""
    original = _cache_store.BLOCK_SIZE
    _cache_store.BLOCK_SIZE = 4  # several blocks even for a few slugs
    try:
        slugs = [f"s{i:02d}-x" for i in range(11)]
        truth = make_entry(b"corrupt me", slugs)
        expected = (truth.slugs(), truth.records(), truth.text())
        truth.close()
    finally:
        _cache_store.BLOCK_SIZE = original
    [file] = [f for f in cache_root().iterdir() if f.name.endswith(".cache")]
    blob = bytearray(file.read_bytes())
    for kind, where, data in corruptions:
        at = where % max(len(blob), 1)
        if kind == "flip" and blob:
            blob[at] ^= 1 + (data[0] if data else 0) % 255
        elif kind == "truncate":
            del blob[at:]
        else:
            blob[at:at] = data
    file.write_bytes(bytes(blob))
    entry = _cache.open_entry(_cache.digest(b"corrupt me"))
    if entry is None:
        return
    reads = {
        "slugs": (entry.slugs, expected[0]),
        "records": (entry.records, expected[1]),
        "text": (entry.text, expected[2]),
    }
    for read, truth_value in reads.values():
        with contextlib.suppress(_cache.Damaged):
            assert read() == truth_value
    for slug in [*slugs, "s00", "zz"]:
        with contextlib.suppress(_cache.Damaged):
            assert entry.record(slug) == expected[1].get(slug)
    entry.close()
