"""Attacks on the task classes' own environments, from outside: each one a defect found and fixed.

A malicious package, a careless author, a shared or planted environments
directory, a Python that is a shim, a store that drifts under one digest.
Every environment is built from wheels made here (no index); the CLI runs
as the installed console script, in a subprocess.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval._env.build import build_environment
from codegenie.eval._env.python import find_python
from codegenie.eval._env.spec import EnvironmentSpec
from codegenie.eval._env.store import listing_digest, open_environment, prune
from codegenie.eval.errors import EnvironmentBuildFailed

from .factory import Bench, make_bench
from .test_grade_environment import candidates, cli, declare, task_class
from .test_grade_environment import script as cli_script
from .wheels import make_wheel, offline_requirements

OWN = find_python(None)


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    directory = tmp_path / "wheels"
    make_wheel(directory, "tinypkg", "1.0", "VERSION = '1.0'\n")
    return directory


def spec_of(path: Path, python: str | None = None) -> EnvironmentSpec:
    return EnvironmentSpec(path, path.read_bytes(), python)


def add_to_wheel(wheel: Path, name: str, data: bytes) -> None:
    """Add the file ``name`` (at the top of site-packages) to ``wheel``, its RECORD too."""
    with zipfile.ZipFile(wheel) as archive:
        files = {item: archive.read(item) for item in archive.namelist()}
    record = next(item for item in files if item.endswith(".dist-info/RECORD"))
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    files[record] += f"{name},sha256={digest},{len(data)}\n".encode()
    files[name] = data
    with zipfile.ZipFile(wheel, "w") as archive:
        for item, content in files.items():
            archive.writestr(item, content)


# --- A package's code runs only in the sandbox: never at build time, for a wheel ------------


def test_a_wheels_pth_file_does_not_run_outside_the_sandbox_at_build(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    """A .pth file runs at every interpreter start: the build must not start one with site."""
    ran = tmp_path / "ran"
    ran.mkdir()
    wheel = make_wheel(wheels, "evilpkg", "1.0", "X = 1\n")
    code = f"import os; open(os.path.join({str(ran)!r}, str(os.getpid())), 'w').close()\n"
    add_to_wheel(wheel, "evil.pth", code.encode())
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "evilpkg==1.0")
    assert OWN is not None
    environment = build_environment(spec_of(requirements), OWN, task_class="evil")
    assert list(ran.iterdir()) == []  # nothing of the package ran on the host
    # Still installed, and compiled (the sandbox mounts it read-only).
    assert (environment.path / "lib").is_dir()
    assert list(environment.path.rglob("evil.pth"))
    assert list(environment.path.rglob("evilpkg/__pycache__/__init__.*.pyc"))
    assert open_environment(environment.digest) is not None


# --- The store: a directory of this user's only; a link in it is not an environment ---------


def test_a_link_in_place_of_an_environment_is_not_used_and_is_replaced(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    assert OWN is not None
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    built = build_environment(spec_of(requirements), OWN, task_class="tiny")
    elsewhere = tmp_path / "elsewhere"
    built.path.rename(elsewhere)  # whole, its record matching: only the link is wrong
    built.path.symlink_to(elsewhere)
    assert open_environment(built.digest) is None
    rebuilt = build_environment(spec_of(requirements), OWN, task_class="tiny")
    assert not rebuilt.path.is_symlink()
    assert rebuilt.path.is_dir()
    assert (elsewhere / "bin" / "python").exists()  # what the link led to is untouched
    assert sorted(p.name for p in env_dir.iterdir()) == sorted([".locks", built.path.name])


def test_prune_removes_links_and_never_what_they_lead_to(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    assert OWN is not None
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    kept = build_environment(spec_of(requirements), OWN, task_class="tiny")
    precious = tmp_path / "precious"
    (precious / "bin").mkdir(parents=True)
    (precious / "bin" / "data").write_text("keep me\n")
    (env_dir / ("e" * 64)).symlink_to(precious)
    (env_dir / f".work-{'d' * 64}-cafecafe").symlink_to(precious)
    prune({kept.digest})
    assert (precious / "bin" / "data").read_text() == "keep me\n"
    assert sorted(p.name for p in env_dir.iterdir()) == sorted([".locks", kept.path.name])


def _chown_away(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a directory to another user")
    os.chown(path, 65534, 65534)


@pytest.mark.parametrize("how", ["others-write", "group-writes", "another-user", "link"])
def test_an_environments_dir_others_control_is_refused(
    tmp_path: Path, env_dir: Path, wheels: Path, how: str
) -> None:
    bench = make_bench(tmp_path / "repo")
    offline_requirements(bench.base / "envs" / "tiny.txt", wheels, "tinypkg==1.0")
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    assert OWN is not None
    spec = spec_of(bench.base / "envs" / "tiny.txt")
    built = build_environment(spec, OWN, task_class="tiny-task")  # while it was private
    if how == "others-write":
        env_dir.chmod(0o777)
    elif how == "group-writes":
        env_dir.chmod(0o770)
    elif how == "another-user":
        _chown_away(env_dir)
    else:
        real = tmp_path / "real-environments"
        env_dir.rename(real)
        env_dir.symlink_to(real)
    # What is there is not used...
    assert open_environment(built.digest) is None
    given = candidates(tmp_path / "cands", {"example": "1.0"})
    done = cli(bench, "grade", "tiny-task", str(given))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "environment-build-failed" in done.stderr
    assert str(env_dir) in done.stderr
    assert "CODEGENIE_ENV_DIR" in done.stderr  # the hint says what to do
    assert "Traceback" not in done.stderr
    # ...nor built into, nor pruned.
    for command in (("env", "build"), ("env", "prune")):
        again = cli(bench, *command)
        assert "Traceback" not in again.stderr
    assert built.path.is_dir()
    assert sorted(p.name for p in env_dir.iterdir()) == sorted([".locks", built.path.name])


# --- Under one digest, one set of packages: a rebuild that differs is not served old results --


def test_a_rebuild_with_other_packages_is_not_answered_from_the_ledger(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    """An unpinned requirement (or a wheel replaced) rebuilds into other packages, one digest."""
    bench = make_bench(tmp_path / "repo")
    offline_requirements(bench.base / "envs" / "tiny.txt", wheels, "tinypkg")  # not pinned
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    given = candidates(tmp_path / "cands", {"example": "1.0"})

    def graded() -> tuple[str, int, str]:
        done = cli(bench, "grade", "tiny-task", str(given), "--format", "json")
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)
        return report["results"][0]["status"], report["reused"], report["environment"]["digest"]

    first = graded()
    assert first[:2] == ("passed", 0)
    make_wheel(wheels, "tinypkg", "2.0", "VERSION = '2.0'\n")  # a newer release appears
    shutil.rmtree(env_dir)  # the cache is cleared (another machine, a prune)
    second = graded()
    assert second[2] == first[2]  # the same requirements bytes: the same digest
    assert second[:2] == ("failed", 0)  # but other packages: run again, not reused


# --- The Python a digest names is the Python the environment is built with -----------------

SHIM = """\
#!/bin/sh
# Like a pyenv shim: which Python it starts depends on the directory it is started in.
if [ -e .python-version ]; then exec {other} "$@"; fi
exec {wanted} "$@"
"""


def test_a_shim_that_picks_its_python_by_directory_cannot_change_the_built_python(
    tmp_path: Path, env_dir: Path, wheels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert OWN is not None
    wanted = next(
        (
            found
            for version in ("3.12", "3.13", "3.11", "3.10", "3.9")
            if (found := find_python(version)) is not None and found.version != OWN.version
        ),
        None,
    )
    if wanted is None:
        pytest.skip("this machine has no Python but the harness's")
    minor = ".".join(wanted.version.split(".")[:2])
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / f"python{minor}"
    shim.write_text(SHIM.format(other=OWN.executable, wanted=wanted.executable))
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    bench = make_bench(tmp_path / "repo")
    offline_requirements(bench.base / "envs" / "tiny.txt", wheels, "tinypkg==1.0")
    (bench.base / "envs" / ".python-version").write_text(f"{OWN.version}\n")  # the bench's own
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt", python=minor)
    done = cli(bench, "env", "build", "--format", "json")
    assert "Traceback" not in done.stderr
    if done.returncode == 0:
        row = json.loads(done.stdout)["environments"][0]
        assert row["python"] == wanted.version
        environment = open_environment(row["digest"])
        assert environment is not None
        said = subprocess.run(
            [
                str(environment.executable),
                "-I",
                "-c",
                "import platform; print(platform.python_version())",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert said.stdout.strip() == wanted.version
    else:  # or refused, typed: never an environment of another Python under this digest
        assert done.returncode == 4, done.stderr
        assert not [p for p in env_dir.iterdir() if not p.name.startswith(".")]


def test_an_interpreter_that_is_not_the_python_the_digest_names_is_a_failed_build(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    assert OWN is not None
    claimed = dataclasses.replace(OWN, version="3.99.0")  # found as 3.99.0; starts as OWN
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    with pytest.raises(EnvironmentBuildFailed) as failed:
        build_environment(spec_of(requirements), claimed, task_class="tiny")
    assert failed.value.step == "python"
    assert "3.99.0" in failed.value.output
    assert OWN.version in failed.value.output
    assert not [p for p in env_dir.iterdir() if p.name != ".locks"]


# --- A requirements file is read in time linear in its size ---------------------------------


@pytest.mark.parametrize("line", ["spaces", "tabs"])
def test_a_requirements_file_of_whitespace_does_not_hang_the_command(
    tmp_path: Path, env_dir: Path, wheels: Path, line: str
) -> None:
    """pip's comment pattern, (^|\\s+)#.*$, backtracks: a 1 MiB line took hours, not ms."""
    bench = make_bench(tmp_path / "repo")
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    requirements = offline_requirements(bench.base / "envs" / "tiny.txt", wheels)
    filler = " " * 400_000 if line == "spaces" else " \t" * 200_000  # within the 1 MiB limit
    with requirements.open("a") as file:
        file.write(f"tinypkg{filler}==1.0 {filler}# pinned\n")
    # The limit is a bound for the hang, not a measure: the fixed parse takes well under a second.
    done = subprocess.run(
        [cli_script(), "env", "list", "--format", "json"],
        cwd=bench.base,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["environments"][0]["built"] is False


# --- Held already (kept as guards): a replaced interpreter is damage ---------------------------


def test_an_interpreter_replaced_by_a_link_to_a_shell_is_damage(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    assert OWN is not None
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    built = build_environment(spec_of(requirements), OWN, task_class="tiny")
    built.executable.unlink()
    built.executable.symlink_to("/bin/sh")
    assert open_environment(built.digest) is None
    rebuilt = build_environment(spec_of(requirements), OWN, task_class="tiny")
    assert os.path.realpath(rebuilt.executable) != os.path.realpath("/bin/sh")
    assert open_environment(rebuilt.digest) is not None


# --- A run under --sandbox none that rewrites a package in place, keeping size and times ------

# Passes when answer.txt holds tinypkg's VERSION. A candidate answering "attack" rewrites
# tinypkg in place as only an uncontained run can: its source with the same length, its
# .pyc's magic spoiled (so Python recompiles the source), every time set back.
STEALTH_RUBRIC = """\
import json, os, sys
from pathlib import Path
import tinypkg

def rewrite(path, change):
    info = os.stat(path)
    path.write_bytes(change(path.read_bytes()))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))

answer = (Path(sys.argv[2]) / "answer.txt").read_text().strip()
if answer == "attack":
    source = Path(tinypkg.__file__)
    rewrite(source, lambda data: data.replace(b"1.0", b"2.0"))
    for pyc in (source.parent / "__pycache__").glob("__init__.*.pyc"):
        rewrite(pyc, lambda data: b"\\0\\0\\0\\0" + data[4:])
passed = answer == tinypkg.VERSION
print(json.dumps({"passed": passed, "reason": f"tinypkg {tinypkg.VERSION}"}))
sys.exit(0 if passed else 1)
"""


def _listed(bench: Bench) -> dict[str, Any]:
    done = cli(bench, "env", "list", "--format", "json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["environments"]
    return dict(row)


def test_a_stealthy_rewrite_by_a_sandbox_none_run_is_damage_and_a_wrong_candidate_fails(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    """Same length, times set back, .pyc spoiled: env list says damaged, the next grade rebuilds."""
    bench = make_bench(tmp_path / "repo")
    offline_requirements(bench.base / "envs" / "tiny.txt", wheels, "tinypkg==1.0")
    task_class(bench, "tiny-task", STEALTH_RUBRIC)
    declare(bench, "tiny-task", environment="envs/tiny.txt")

    def graded(answer: str, *options: str) -> subprocess.CompletedProcess[str]:
        given = candidates(tmp_path / f"cands-{answer}", {"example": answer})
        return cli(bench, "grade", "tiny-task", str(given), "--format", "json", *options)

    attack = graded("attack", "--sandbox", "none")
    assert attack.returncode == 1, attack.stderr
    listed = _listed(bench)
    assert listed["built"] is False
    assert listed["state"] == "damaged"
    assert "not the ones built" in listed["damage"]
    text = cli(bench, "env", "list").stdout
    assert "damaged: " in text
    assert "`env build tiny-task` builds it again" in text

    refused = graded("2.0", "--sandbox", "none", "--no-build")
    assert refused.returncode == 4, refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["type"] == "EnvironmentNotBuilt"
    assert error["attributes"]["damage"] == listed["damage"]
    assert "is damaged: " in error["message"]
    given = tmp_path / "cands-2.0"
    said = cli(bench, "grade", "tiny-task", str(given), "--sandbox", "none", "--no-build").stderr
    assert "codegenie-bench env build tiny-task" in said

    wrong = graded("2.0", "--sandbox", "none")  # what the rewritten package says
    assert "is damaged" in wrong.stderr
    assert "building the environment of tiny-task" in wrong.stderr
    assert wrong.returncode == 1, wrong.stderr
    assert json.loads(wrong.stdout)["results"][0]["status"] == "failed"
    assert _listed(bench)["state"] == "built"


def _same_length(path: Path) -> None:
    info = path.stat()
    path.write_bytes(path.read_bytes().replace(b"1.0", b"6.6"))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _spoiled_magic(path: Path) -> None:
    pyc = next(path.parent.glob("__pycache__/__init__.*.pyc"))
    info = pyc.stat()
    data = pyc.read_bytes()
    pyc.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    os.utime(pyc, ns=(info.st_atime_ns, info.st_mtime_ns))


def _to_symlink(path: Path) -> None:
    copy = path.parent.parent / "copy-of-init.py"
    shutil.copy2(path, copy)
    path.unlink()
    path.symlink_to(copy)


def _xattr(path: Path) -> None:
    try:
        os.setxattr(path, "user.codegenie-test", b"planted")
    except OSError as exc:
        pytest.skip(f"no extended attributes here: {exc}")


def _owner(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(path, 65534, 65534)


def _directory_mode(path: Path) -> None:
    path.parent.parent.chmod(0o777)  # site-packages: now anyone may plant a module


STEALTHY: dict[str, Any] = {
    "same-length-rewrite-times-restored": _same_length,
    "pyc-magic-spoiled-times-restored": _spoiled_magic,
    "file-replaced-by-a-link-to-a-copy": _to_symlink,
    "pth-file-added": lambda path: (path.parent.parent / "zz.pth").write_text("import os\n"),
    "sitecustomize-added": lambda path: (path.parent.parent / "sitecustomize.py").write_text(""),
    "file-removed": lambda path: path.unlink(),
    "extended-attribute-set": _xattr,
    "owner-changed": _owner,
    "directory-mode-changed": _directory_mode,
    "setuid-bit-set": lambda path: path.chmod(0o4644),
}


@pytest.mark.parametrize("damage", sorted(STEALTHY))
def test_each_change_to_an_environment_is_damage_that_env_list_reports(
    tmp_path: Path, env_dir: Path, wheels: Path, damage: str
) -> None:
    """Contents, kinds, names, owners, modes, extended attributes: env list says damaged."""
    assert OWN is not None
    bench = make_bench(tmp_path / "repo")
    requirements = offline_requirements(bench.base / "envs" / "tiny.txt", wheels, "tinypkg==1.0")
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    built = build_environment(spec_of(requirements), OWN, task_class="tiny-task")
    assert _listed(bench)["built"] is True
    STEALTHY[damage](next(built.path.rglob("tinypkg/__init__.py")))
    listed = _listed(bench)
    assert (listed["built"], listed["digest"]) == (False, built.digest)
    assert listed["state"] == "damaged"
    assert listed["damage"]
    rebuilt = build_environment(spec_of(requirements), OWN, task_class="tiny-task")
    assert open_environment(rebuilt.digest) is not None
    assert not list(rebuilt.path.rglob("sitecustomize.py"))


def test_a_copy_of_the_same_contents_is_not_damage_and_is_read_once(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    """A cache restored (new inodes, times to the second) is verified by contents, then kept."""
    assert OWN is not None
    bench = make_bench(tmp_path / "repo")
    requirements = offline_requirements(bench.base / "envs" / "tiny.txt", wheels, "tinypkg==1.0")
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    built = build_environment(spec_of(requirements), OWN, task_class="tiny-task")
    restored = tmp_path / "restored"
    shutil.copytree(built.path, restored, symlinks=True)
    for path in [restored, *restored.rglob("*")]:
        if not path.is_symlink():
            whole = path.stat().st_mtime_ns // 10**9 * 10**9  # as GNU tar keeps them
            os.utime(path, ns=(whole, whole))
    shutil.rmtree(built.path)
    restored.rename(built.path)
    assert _listed(bench)["built"] is True
    verified = env_dir / f".{built.path.name}.verified"
    assert verified.read_text().strip() == listing_digest(built.path)[0]
    module = next(built.path.rglob("tinypkg/__init__.py"))
    module.write_bytes(module.read_bytes())  # written, the same bytes: still whole
    assert _listed(bench)["built"] is True
    _same_length(module)
    assert _listed(bench)["built"] is False
