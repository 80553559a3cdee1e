"""The `list` cache under attack: planted links, FIFOs, devices, forged entries, shared directories."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from codegenie.eval._cache import directory as cache_directory
from codegenie.eval._cache import entry as _cache
from codegenie.eval._cache import listing as _listing
from codegenie.eval._cache import store as _cache_store
from codegenie.eval._cache.listing import read_cached
from codegenie.eval._cache.store import store_listing
from codegenie.eval.manifest import clear_manifest_cache, load_manifest_cached

from .factory import Bench, make_bench

POISON = (["poisoned"], ["bench.poisoned.registration"], ["bench"])


def listing(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m codegenie.eval list` in a subprocess; a hang fails through the timeout."""
    return subprocess.run(
        [sys.executable, "-m", "codegenie.eval", "list", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def cache_root() -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "codegenie-eval" / "manifests"


def entry_name(data: bytes) -> str:
    """The name of the cache entry of the manifest whose bytes are ``data``."""
    return f"{hashlib.blake2b(data, digest_size=32).hexdigest()}.cache"


def entry_of(bench: Bench) -> Path:
    return cache_root() / entry_name(bench.manifest.read_bytes())


def finishes(action: Callable[[], object], seconds: float = 10.0) -> object:
    """Run ``action`` in a thread; fail (instead of hanging) if it has not returned in time."""
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(action()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the cache read hung"
    return outcome[0]


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return make_bench(tmp_path / "repo", "alpha", "beta-two")


@pytest.fixture
def expected(bench: Bench) -> str:
    """The output of a fresh validation, which the cache must never change."""
    result = listing(bench.base, "--no-cache")
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_answer_unchanged(bench: Bench, expected: str) -> None:
    """`list` (twice: filling the cache, then from it) prints exactly the fresh answer."""
    for _ in range(2):
        result = listing(bench.base)
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected
        assert result.stderr == ""


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's that a planted link points at; it must never change."""
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


# -- writing -----------------------------------------------------------------------------


def test_a_link_planted_at_the_old_temporary_name_is_never_written_through(
    bench: Bench, victim: Path
) -> None:
    """A symbolic link at `<entry>.<pid>.tmp` (once the temporary name) leaves its target alone."""
    store_listing(b"another manifest", POISON, version=1)  # the directory exists, private
    data = bench.manifest.read_bytes()
    target = cache_root() / entry_name(data)
    planted = Path(f"{target}.{os.getpid()}.tmp")
    planted.symlink_to(victim)
    store_listing(data, (["alpha"], ["bench.alpha.registration"], ["bench"]), version=1)
    assert victim.read_text() == "precious\n"
    assert planted.is_symlink()
    assert target.is_file()
    assert not target.is_symlink()
    assert read_cached(data) == (["alpha"], ["bench.alpha.registration"], ["bench"])


def test_a_link_planted_at_the_entry_name_is_replaced_not_followed(
    bench: Bench, expected: str, victim: Path
) -> None:
    """A symbolic link at the entry's own name is replaced by the entry; its target is untouched."""
    store_listing(b"another manifest", POISON, version=1)
    entry = entry_of(bench)
    entry.symlink_to(victim)
    assert_answer_unchanged(bench, expected)
    assert victim.read_text() == "precious\n"
    assert not entry.is_symlink()


def test_a_link_planted_at_the_key_is_replaced_not_followed(bench: Bench, victim: Path) -> None:
    """A symbolic link at the key's name is not read as a key, and writing replaces the link."""
    store_listing(b"another manifest", POISON, version=1)
    key = cache_root() / "key"
    key.unlink()
    key.symlink_to(victim)
    store_listing(b"manifest", POISON, version=1)
    assert victim.read_text() == "precious\n"
    assert not key.is_symlink()
    assert read_cached(b"manifest") == POISON


def test_files_are_private_and_no_temporary_file_is_left(bench: Bench) -> None:
    """The directories are created 0700, the entry and key 0600; nothing else is left behind."""
    assert listing(bench.base).returncode == 0
    for directory in (cache_root().parent, cache_root()):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    names = sorted(p.name for p in cache_root().iterdir())
    assert names == sorted([entry_of(bench).name, "key"])
    for name in names:
        assert stat.S_IMODE((cache_root() / name).stat().st_mode) == 0o600


# -- reading -----------------------------------------------------------------------------


def test_a_fifo_entry_is_a_miss_not_a_hang(bench: Bench, expected: str) -> None:
    """A FIFO at the entry's name is skipped without waiting for a writer."""
    listing(bench.base)
    entry = entry_of(bench)
    entry.unlink()
    os.mkfifo(entry)
    assert finishes(lambda: read_cached(bench.manifest.read_bytes())) is None
    result = listing(bench.base)
    assert result.returncode == 0
    assert result.stdout == expected
    assert result.stderr == ""


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_an_entry_linked_to_a_device_is_a_miss(bench: Bench, expected: str, device: str) -> None:
    """An entry that is a link to /dev/zero (or /dev/null) is never followed nor read."""
    listing(bench.base)
    entry = entry_of(bench)
    entry.unlink()
    entry.symlink_to(device)
    result = listing(bench.base)
    assert result.returncode == 0
    assert result.stdout == expected
    assert result.stderr == ""


def test_an_entry_linked_to_a_valid_entry_elsewhere_is_a_miss(bench: Bench, tmp_path: Path) -> None:
    """Even a link to a well-formed entry is not followed: entries are regular files only."""
    data = bench.manifest.read_bytes()
    store_listing(data, POISON, version=1)
    entry = entry_of(bench)
    elsewhere = tmp_path / "elsewhere.cache"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    assert read_cached(data) is None


def test_an_oversized_entry_is_a_miss_without_being_read(bench: Bench) -> None:
    """An entry larger than any manifest's listing (a sparse 1 TiB file) is skipped from its size."""
    data = bench.manifest.read_bytes()
    store_listing(data, POISON, version=1)
    with entry_of(bench).open("r+b") as file:
        file.truncate(1 << 40)
    assert finishes(lambda: read_cached(data)) is None


def _forged_entry(data: bytes, checksum: str) -> bytes:
    """A well-formed entry for ``data`` listing an extra slug, signed without the cache's key."""
    slugs = ["alpha", "forged-slug", "beta-two"]
    modules = [f"bench.{slug.replace('-', '_')}.registration" for slug in slugs]
    roots = ["bench"] * 3
    forged = _cache_store._encode(
        _cache.digest(data),
        os.urandom(32),
        (slugs, modules, roots, [(1, 1, 1, 1, 1, 1)] * 3),
        globals_line="1 2 1 4 1",
        text=_listing.render_text((slugs, modules, roots)),
    )
    magic, digest, other_key, rest = forged.split(b"\n", 3)
    toc_size, sections = rest.split(b"\n", 1)
    signed = b"\n".join([magic, digest, toc_size, sections[: int(toc_size)]])
    value = {
        "sha256-sections": lambda: hashlib.sha256(sections).hexdigest().encode(),
        "sha256-signed": lambda: hashlib.sha256(signed).hexdigest().encode(),
        "blake2b-unkeyed": lambda: hashlib.blake2b(signed, digest_size=32).hexdigest().encode(),
        "blake2b-other-key": lambda: other_key,
    }[checksum]()
    return b"\n".join([magic, digest, value, rest])


@pytest.mark.parametrize(
    "checksum", ["sha256-sections", "sha256-signed", "blake2b-unkeyed", "blake2b-other-key"]
)
def test_an_entry_forged_without_the_key_is_a_miss(
    bench: Bench, expected: str, checksum: str
) -> None:
    """A well-formed entry, section checksums and all, signed without the key never changes `list`."""
    listing(bench.base)
    entry = entry_of(bench)
    data = bench.manifest.read_bytes()
    entry.write_bytes(_forged_entry(data, checksum))
    assert _cache.open_entry(_cache.digest(data)) is None
    result = listing(bench.base)
    assert result.returncode == 0
    assert "forged-slug" not in result.stdout
    assert result.stdout == expected
    clear_manifest_cache()
    assert "forged-slug" not in load_manifest_cached(str(bench.manifest))


def test_a_section_edited_by_hand_is_a_miss(bench: Bench, expected: str) -> None:
    """An entry whose list text was edited (its section checksum no longer matching) is a miss."""
    listing(bench.base)
    entry = entry_of(bench)
    entry.write_bytes(entry.read_bytes().replace(b"alpha ", b"alphX "))
    result = listing(bench.base)
    assert result.returncode == 0
    assert result.stdout == expected


def test_entries_written_under_another_key_are_misses(bench: Bench, expected: str) -> None:
    """An entry copied from another account (another key) is a miss, then rewritten and used."""
    data = bench.manifest.read_bytes()
    store_listing(data, POISON, version=1)
    (cache_root() / "key").write_bytes(os.urandom(32))
    assert read_cached(data) is None
    assert_answer_unchanged(bench, expected)
    assert read_cached(data) is not None


# -- the directory ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702, 0o1777])
def test_a_directory_writable_by_others_is_ignored(bench: Bench, expected: str, mode: int) -> None:
    """A cache directory others can write to is neither read nor written."""
    data = bench.manifest.read_bytes()
    store_listing(
        data, POISON, version=1
    )  # a well-formed entry: trusted only in a private directory
    entry = entry_of(bench)
    cache_root().chmod(mode)
    assert read_cached(data) is None
    entry.unlink()
    assert_answer_unchanged(bench, expected)
    assert not entry.exists()


def test_a_directory_readable_by_others_is_still_used(bench: Bench) -> None:
    """0755 (an older umask) is private enough: nobody else can write, so the cache is used."""
    data = bench.manifest.read_bytes()
    store_listing(data, POISON, version=1)
    cache_root().chmod(0o755)
    assert read_cached(data) == POISON


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
@pytest.mark.parametrize("what", ["directory", "entry", "key"])
def test_files_owned_by_another_user_are_ignored(bench: Bench, expected: str, what: str) -> None:
    """A directory, entry or key owned by another user is never trusted."""
    data = bench.manifest.read_bytes()
    store_listing(data, POISON, version=1)
    path = {"directory": cache_root(), "entry": entry_of(bench), "key": cache_root() / "key"}[what]
    os.chown(path, 65534, 65534)
    assert read_cached(data) is None
    if what != "directory":
        return
    entry_of(bench).unlink()
    assert_answer_unchanged(bench, expected)
    assert not entry_of(bench).exists()


def test_a_directory_that_is_a_link_is_ignored(bench: Bench, expected: str, tmp_path: Path) -> None:
    """A `manifests` directory that is a symbolic link (to a well-formed cache) is not used."""
    data = bench.manifest.read_bytes()
    store_listing(data, POISON, version=1)
    real = tmp_path / "real-cache"
    cache_root().rename(real)
    cache_root().symlink_to(real)
    assert read_cached(data) is None
    assert_answer_unchanged(bench, expected)


def test_pruning_removes_only_the_cache_own_names(tmp_path: Path, victim: Path) -> None:
    """Pruning deletes old `<digest>.cache` entries and stale temporaries, nothing else."""
    store_listing(b"first", POISON, version=1)
    root = cache_root()
    foreign = {
        "notes.cache": "mine",
        "README": "mine",
        f"{'A' * 64}.cache": "upper-case hex: not a name the cache writes",
        f"{'a' * 63}.cache": "63 digits",
    }
    for name, text in foreign.items():
        (root / name).write_text(text)
    (root / "sub.cache").mkdir()
    old = time.time() - 7200
    stale, fresh = root / "tmp-0123456789abcdef.partial", root / "tmp-fedcba9876543210.partial"
    stale.write_bytes(b"")
    fresh.write_bytes(b"")
    os.utime(stale, (old, old))
    for n in range(40):
        store_listing(f"manifest {n}".encode(), POISON, version=1)
        os.utime(root / entry_name(f"manifest {n}".encode()))
    own = [p for p in root.iterdir() if len(p.name) == 70 and p.name.endswith(".cache")]
    assert len([p for p in own if p.is_file() and p.name[:64].islower()]) <= 32
    for name, text in foreign.items():
        assert (root / name).read_text() == text
    assert (root / "sub.cache").is_dir()
    assert not stale.exists()
    assert fresh.exists()
    assert victim.read_text() == "precious\n"


def test_an_unusable_cache_never_fails_store_or_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache path blocked by a file: store does nothing, read misses, neither raises."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    store_listing(b"x", POISON, version=1)
    assert read_cached(b"x") is None


def test_without_directory_descriptors_there_is_no_cache(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where files cannot be reached through an open directory, nothing is read or written."""
    monkeypatch.setattr(cache_directory, "SUPPORTED", False)
    data = bench.manifest.read_bytes()
    store_listing(data, POISON, version=1)
    assert read_cached(data) is None
    assert not cache_root().exists()


# -- printing from the cache ------------------------------------------------------------


def test_a_reader_that_stops_early_ends_the_cached_list_quietly(tmp_path: Path) -> None:
    """`list | head -1` served from the cache exits 0 with nothing on stderr."""
    entries = "".join(
        f'[task-classes.t{i:05d}]\nmodule = "bench.t{i:05d}.registration"\nroot = "bench"\n'
        for i in range(4000)
    )
    (tmp_path / "bench.toml").write_text("schema-version = 1\n" + entries)
    assert listing(tmp_path).returncode == 0  # fills the cache
    process = subprocess.Popen(
        [sys.executable, "-m", "codegenie.eval", "list"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    assert process.stdout.readline().startswith(b"t00000")
    process.stdout.close()
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=30) == 0
    assert stderr == b""


def test_output_the_locale_cannot_encode_is_left_to_the_full_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cached path writes nothing it cannot encode, and nothing to a closed stdout."""
    buffer = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buffer, encoding="ascii"))
    assert _listing._write("root é\n") is None
    sys.stdout.flush()
    assert buffer.getvalue() == b""
    monkeypatch.setattr(sys, "stdout", None)
    assert _listing._write("x\n") is None
