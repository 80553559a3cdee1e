"""`codegenie-bench new` against bad arguments, concurrent runs, links and failing disks, and `init` against failing disks (docs/security.md, section 'Nothing lost')."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval import scaffold
from codegenie.eval.cli import main
from codegenie.eval.errors import InvalidTaskClassName, ScaffoldConflict
from codegenie.eval.manifest import BenchManifest, json_schema
from codegenie.eval.scaffold import ScaffoldArgumentInvalid, validate_new_entry

from .factory import Bench, make_bench
from .test_cli import json_error, run


def _snapshot(base: Path) -> dict[str, bytes | None]:
    """Every path under ``base``: a file's bytes, ``None`` for a directory or link."""
    found: dict[str, bytes | None] = {}
    for path in sorted(base.rglob("*")):
        key = str(path.relative_to(base))
        found[key] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return found


BAD_ROOTS = [
    "../x",
    "/tmp/bench",
    "bench/../bench",
    "bench\\x",
    "a/./bench",
    "bench/class",
    "bench/",
    "",
    "./bench",
    "bench//x",
    "a\nb/bench",
    "bench\x7f",
    "x\x1b[31m/bench",
    "bench/not-an-identifier",
]


@pytest.mark.parametrize("root", BAD_ROOTS)
def test_new_refuses_a_root_the_manifest_would_refuse(tmp_path: Path, root: str) -> None:
    """A --root that breaks the manifest's rules is a usage error (exit 2), nothing written."""
    make_bench(tmp_path, "foo")
    before = _snapshot(tmp_path)
    result = run("new", "bar", "--root", root, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "error[invalid-argument]: invalid --root" in result.stderr
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr
    assert len(result.stderr.splitlines()) == 2  # the diagnostic and its hint: nothing forged
    error = json_error(run("new", "bar", "--root", root, "--format", "json", cwd=tmp_path))
    assert error["type"] == "ScaffoldArgumentInvalid"
    assert error["exit_code"] == 2
    assert error["attributes"]["argument"] == "--root"
    assert error["attributes"]["value"] == root
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("slug", "reason"),
    [
        ("Bad", "wrong case"),
        ("class", "reserved name"),
        ("a\nb", "non-slug character"),
        ("", "empty"),
    ],
)
def test_new_refuses_a_bad_slug_as_every_command_does(
    tmp_path: Path, slug: str, reason: str
) -> None:
    """A slug that breaks the slug rules is InvalidTaskClassName (exit 1), nothing written."""
    make_bench(tmp_path, "foo")
    before = _snapshot(tmp_path)
    result = run("new", slug, "--format", "json", cwd=tmp_path)
    assert result.returncode == 1
    error = json_error(result)
    assert error["type"] == "InvalidTaskClassName"
    assert error["exit_code"] == 1
    assert error["attributes"] == {"name": slug, "reason": reason}
    assert _snapshot(tmp_path) == before


def test_validate_new_entry_uses_the_manifest_model() -> None:
    """validate_new_entry returns the ManifestEntry the manifest would hold, or raises with the rule."""
    entry = validate_new_entry("secret-rotation", "suites/bench")
    assert entry.module == "bench.secret_rotation.registration"
    assert entry.root == "suites/bench"
    with pytest.raises(ScaffoldArgumentInvalid) as caught:
        validate_new_entry("secret-rotation", "bench/..")
    assert caught.value.argument == "--root"
    assert "'..'" in caught.value.reason
    with pytest.raises(ScaffoldArgumentInvalid):
        validate_new_entry("secret-rotation", "x\x00y/bench")
    with pytest.raises(InvalidTaskClassName) as invalid:
        validate_new_entry("Secret", "bench")
    assert (invalid.value.name, invalid.value.reason, invalid.value.exit_code) == (
        "Secret",
        "wrong case",
        1,
    )


def test_new_refuses_text_it_cannot_write(tmp_path: Path) -> None:
    """A root or description holding lone surrogates (undecodable bytes) is refused, nothing written."""
    bench = make_bench(tmp_path, "foo")
    before = _snapshot(tmp_path)
    manifest = BenchManifest.load(bench.manifest)
    with pytest.raises(ScaffoldArgumentInvalid) as caught:
        scaffold.scaffold_task_class(manifest, "bar", root="donn\udcc3es/bench")
    assert (caught.value.argument, caught.value.value) == ("--root", "donn\udcc3es/bench")
    with pytest.raises(ScaffoldArgumentInvalid) as caught:
        scaffold.scaffold_task_class(manifest, "bar", description="caf\udcff")
    assert (caught.value.argument, caught.value.exit_code) == ("--description", 2)
    assert "UTF-8" in caught.value.hint
    assert _snapshot(tmp_path) == before


def test_new_refuses_a_root_that_a_link_takes_outside(tmp_path: Path) -> None:
    """A --root through a symbolic link that leaves the manifest's directory is refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "repo"
    make_bench(base, "foo")
    (base / "escape").symlink_to(outside)
    before = _snapshot(tmp_path)
    error = json_error(run("new", "bar", "--root", "escape/bench", "--format", "json", cwd=base))
    assert error["type"] == "ScaffoldArgumentInvalid"
    assert "outside the manifest's directory" in error["attributes"]["reason"]
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("root", ["notes", "notes/bench"])
def test_new_with_a_root_that_is_a_file_is_a_conflict(tmp_path: Path, root: str) -> None:
    """A --root whose path runs into an existing file is ScaffoldConflict (exit 1), not FileExistsError."""
    make_bench(tmp_path, "foo")
    (tmp_path / "notes").write_text("not a directory\n")
    before = _snapshot(tmp_path)
    result = run("new", "bar", "--root", root, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "error[scaffold-conflict]" in result.stderr
    assert "is not a directory" in result.stderr
    assert "Traceback" not in result.stderr
    error = json_error(run("new", "bar", "--root", root, "--format", "json", cwd=tmp_path))
    assert error["attributes"]["path"] == str(tmp_path / "notes")
    assert _snapshot(tmp_path) == before


def test_sixteen_concurrent_runs_lose_no_entry(tmp_path: Path) -> None:
    """Sixteen `new` runs at once all land in bench.toml, which still validates."""
    bench = make_bench(tmp_path, "foo")
    slugs = [f"task-{n:02d}" for n in range(16)]
    script = str(Path(sys.executable).parent / "codegenie-bench")
    processes = [
        subprocess.Popen(
            [script, "new", slug],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for slug in slugs
    ]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()
    manifest = BenchManifest.load(bench.manifest)
    assert sorted(manifest.slugs()) == sorted(["foo", *slugs])
    for slug in slugs:
        assert (bench.root / slug.replace("-", "_") / "registration.py").is_file()
    assert not list(tmp_path.glob(".bench.toml.*"))


def test_new_writes_through_a_symlinked_manifest(tmp_path: Path) -> None:
    """A bench.toml that is a symbolic link keeps being a link; its target gets the entry."""
    bench = make_bench(tmp_path, "foo")
    config = tmp_path / "config"
    config.mkdir()
    target = config / "bench.toml"
    bench.manifest.rename(target)
    target.chmod(0o640)
    bench.manifest.symlink_to(Path("config") / "bench.toml")
    result = run("new", "bar", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert bench.manifest.is_symlink()
    assert os.readlink(bench.manifest) == str(Path("config") / "bench.toml")
    assert "[task-classes.bar]" in target.read_text()
    assert target.stat().st_mode & 0o777 == 0o640
    assert (bench.root / "bar" / "registration.py").is_file()
    assert run("show", "bar", cwd=tmp_path).returncode == 0


_LIMITED = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
os.execv(sys.argv[2], sys.argv[2:])
"""


@pytest.mark.parametrize(
    ("limit", "failing"),
    [(1024, "rubric.py"), (4096, "bench.toml")],
)
def test_a_full_disk_removes_everything_new_created(
    tmp_path: Path, limit: int, failing: str
) -> None:
    """EFBIG while writing the package or the manifest: ScaffoldFailed, and the tree is as before."""
    bench = make_bench(tmp_path, "foo")
    # A manifest larger than the limit, so that rewriting it fails.
    bench.manifest.write_text(bench.manifest.read_text() + "# padding\n" * 800)
    before = _snapshot(tmp_path)
    script = str(Path(sys.executable).parent / "codegenie-bench")
    result = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(limit), script, "new", "bar", "--root", "suite/bench"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 4, result.stderr
    assert "error[scaffold-failed]" in result.stderr
    assert failing in result.stderr
    assert "Traceback" not in result.stderr
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "suite").exists()


# What init writes, in order: bench.toml, bench/, .gitignore, docs/bench.schema.json.
_SCHEMA_SIZE = len(json.dumps(json_schema(), indent=2, ensure_ascii=True)) + 1
_INIT_LIMITS = {
    # Over the manifest, under the .gitignore: the .gitignore is cut off partway.
    ".gitignore": (len(scaffold._MANIFEST) + len(scaffold.GITIGNORE)) // 2,
    # Over both, under the schema: the .gitignore was written whole before the schema failed.
    "docs/bench.schema.json": (len(scaffold.GITIGNORE) + _SCHEMA_SIZE) // 2,
}


@pytest.mark.parametrize("failing", list(_INIT_LIMITS))
def test_a_full_disk_removes_everything_init_created(tmp_path: Path, failing: str) -> None:
    """EFBIG partway through init: ScaffoldFailed, and nothing is left, the .gitignore included."""
    assert len(scaffold._MANIFEST) < len(scaffold.GITIGNORE) < _SCHEMA_SIZE
    script = str(Path(sys.executable).parent / "codegenie-bench")
    limit = str(_INIT_LIMITS[failing])
    result = subprocess.run(
        [sys.executable, "-c", _LIMITED, limit, script, "init", "--manifest", "top/bench.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 4, result.stderr
    assert f"top/{failing}: error[scaffold-failed]" in result.stderr
    assert "Traceback" not in result.stderr
    assert _snapshot(tmp_path) == {}
    assert scaffold.init_bench(tmp_path / "bench.toml").created[-1] == tmp_path / ".gitignore"


@pytest.mark.parametrize(
    ("target", "code"),
    [("_write_atomically", errno.ENOSPC), ("_write_new_file", errno.ENOSPC)],
)
def test_a_failing_write_is_a_typed_error_with_nothing_left(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    code: int,
) -> None:
    """ENOSPC from any write: ScaffoldFailed (exit 4) in JSON, and the tree is as before."""
    bench = make_bench(tmp_path, "foo")
    before = _snapshot(tmp_path)

    def full(*_: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(scaffold, target, full)
    args = ["new", "bar", "--root", "deep/er/bench", "--manifest", str(bench.manifest)]
    assert main([*args, "--format", "json"]) == 4
    document = json.loads(capsys.readouterr().out)
    assert document["error"]["type"] == "ScaffoldFailed"
    assert document["error"]["attributes"]["reason"] == os.strerror(code)
    assert _snapshot(tmp_path) == before


def test_a_read_only_tree_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """EROFS when creating directories: ScaffoldFailed (exit 4) naming the directory, nothing left."""
    bench = make_bench(tmp_path, "foo")
    before = _snapshot(tmp_path)
    real_mkdir = os.mkdir

    def read_only(path: object, *args: object, **kwargs: object) -> None:
        if str(path).startswith(str(tmp_path)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", read_only)
    assert main(["new", "bar", "--manifest", str(bench.manifest)]) == 4
    err = capsys.readouterr().err
    assert "error[scaffold-failed]" in err
    assert os.strerror(errno.EROFS) in err
    assert _snapshot(tmp_path) == before


def test_a_slug_added_meanwhile_is_seen_under_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest is read again under the lock: a slug another run added is a conflict."""
    bench = make_bench(tmp_path, "foo")
    stale = BenchManifest.load(bench.manifest)
    Bench(tmp_path, entries=dict(bench.entries)).add("bar")  # another run added bar meanwhile
    with pytest.raises(ScaffoldConflict):
        scaffold.scaffold_task_class(stale, "bar")
