"""Building environments with uv: by digest, atomically, once, checked before each use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codegenie.eval._env.build import build_environment
from codegenie.eval._env.declared import declared_spec, ready_environment
from codegenie.eval._env.python import find_python
from codegenie.eval._env.spec import EnvironmentSpec
from codegenie.eval._env.store import (
    RECORD_NAME,
    environments_dir,
    open_environment,
    prune,
)
from codegenie.eval.errors import EnvironmentBuildFailed, EnvironmentNotBuilt, PythonUnavailable

from .wheels import make_wheel, offline_requirements

OWN = find_python(None)


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    directory = tmp_path / "wheels"
    make_wheel(directory, "tinypkg", "1.0", "VERSION = '1.0'\n")
    make_wheel(directory, "tinypkg", "2.0", "VERSION = '2.0'\n")
    return directory


def spec_of(path: Path, python: str | None = None) -> EnvironmentSpec:
    return EnvironmentSpec(path, path.read_bytes(), python)


def built_python_says(executable: Path, code: str) -> str:
    done = subprocess.run(
        [str(executable), "-I", "-c", code], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_builds_from_a_wheel_directory_and_keeps_it_by_digest(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    spec = spec_of(requirements)
    said: list[str] = []
    assert OWN is not None
    environment = build_environment(spec, OWN, task_class="tiny", progress=said.append)
    assert environment.digest == spec.digest(OWN)
    assert environment.path == env_dir / environment.digest.removeprefix("blake2b-256:")
    assert environment.python == OWN.version
    assert len(said) == 1
    assert "tiny" in said[0]
    assert (
        built_python_says(environment.executable, "import tinypkg; print(tinypkg.VERSION)") == "1.0"
    )
    # The harness's own packages are not there.
    assert (
        built_python_says(
            environment.executable, "import importlib.util as u; print(u.find_spec('pydantic'))"
        )
        == "None"
    )
    # Built once: the second call finds it, and says nothing.
    again = build_environment(spec, OWN, task_class="tiny", progress=said.append)
    assert again == environment
    assert len(said) == 1
    # Nothing but the environment, its lock directory: no work directory left behind.
    assert sorted(p.name for p in env_dir.iterdir()) == sorted([environment.path.name, ".locks"])


def test_the_digest_covers_the_requirements_bytes_the_python_and_uv(tmp_path: Path) -> None:
    assert OWN is not None
    one = EnvironmentSpec(tmp_path / "a.txt", b"tinypkg==1.0\n", None)
    same_bytes_elsewhere = EnvironmentSpec(tmp_path / "other" / "b.txt", b"tinypkg==1.0\n", None)
    two = EnvironmentSpec(tmp_path / "a.txt", b"tinypkg==2.0\n", None)
    assert one.digest(OWN, "uv 1") == same_bytes_elsewhere.digest(OWN, "uv 1")
    assert one.digest(OWN, "uv 1") != two.digest(OWN, "uv 1")
    assert one.digest(OWN, "uv 1") != one.digest(OWN, "uv 2")
    other_python = type(OWN)(OWN.executable, "3.99.0", OWN.implementation, OWN.platform)
    assert one.digest(OWN, "uv 1") != one.digest(other_python, "uv 1")
    assert one.digest(OWN).startswith("blake2b-256:")


def test_a_changed_pin_is_another_environment(tmp_path: Path, env_dir: Path, wheels: Path) -> None:
    assert OWN is not None
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    first = build_environment(spec_of(requirements), OWN, task_class="tiny")
    offline_requirements(requirements, wheels, "tinypkg==2.0")
    second = build_environment(spec_of(requirements), OWN, task_class="tiny")
    assert first.digest != second.digest
    assert built_python_says(second.executable, "import tinypkg; print(tinypkg.VERSION)") == "2.0"
    assert open_environment(first.digest) is not None  # both kept until pruned


@pytest.mark.parametrize("damage", ["delete", "truncate", "add", "rewrite"])
def test_a_damaged_environment_is_never_used_and_is_rebuilt(
    tmp_path: Path, env_dir: Path, wheels: Path, damage: str
) -> None:
    assert OWN is not None
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    environment = build_environment(spec_of(requirements), OWN, task_class="tiny")
    module = next(environment.path.rglob("tinypkg/__init__.py"))
    if damage == "delete":
        module.unlink()
    elif damage == "truncate":
        module.write_bytes(b"")
    elif damage == "add":
        (module.parent.parent / "sitecustomize.py").write_text("import os\n")
    else:  # the same size, another modification time
        module.write_text(module.read_text().replace("1.0", "6.6"))
    assert open_environment(environment.digest) is None
    with pytest.raises(EnvironmentNotBuilt) as refused:
        ready_environment(spec_of(requirements), task_class="tiny", build=False)
    assert refused.value.task_class == "tiny"
    assert "env build tiny" in refused.value.hint
    rebuilt = build_environment(spec_of(requirements), OWN, task_class="tiny")
    assert open_environment(rebuilt.digest) is not None
    assert built_python_says(rebuilt.executable, "import tinypkg; print(tinypkg.VERSION)") == "1.0"
    assert not (rebuilt.path / "lib" / "sitecustomize.py").exists()


def test_a_record_that_lies_is_damage(tmp_path: Path, env_dir: Path, wheels: Path) -> None:
    assert OWN is not None
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    environment = build_environment(spec_of(requirements), OWN, task_class="tiny")
    record = environment.path / RECORD_NAME
    for text in ("", "not json", json.dumps({"format": 1, "digest": "blake2b-256:00"}), "[]"):
        record.write_text(text)
        assert open_environment(environment.digest) is None


def test_a_failed_build_says_what_uv_said_and_leaves_nothing(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    assert OWN is not None
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "no-such-package==1.0")
    with pytest.raises(EnvironmentBuildFailed) as failed:
        build_environment(spec_of(requirements), OWN, task_class="tiny")
    error = failed.value
    assert error.exit_code == 4
    assert error.step == "install"
    assert error.task_class == "tiny"
    assert error.requirements == requirements
    assert "no-such-package" in error.output
    assert not [p for p in env_dir.iterdir() if p.name != ".locks"]


def test_concurrent_builds_of_one_environment_build_it_once(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    requirements = offline_requirements(tmp_path / "req.txt", wheels, "tinypkg==1.0")
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from codegenie.eval._env.build import build_environment
        from codegenie.eval._env.python import find_python
        from codegenie.eval._env.spec import EnvironmentSpec
        path = Path({str(requirements)!r})
        spec = EnvironmentSpec(path, path.read_bytes(), None)
        env = build_environment(spec, find_python(None), task_class="tiny",
                                progress=lambda line: print("BUILT", flush=True))
        print(env.digest, flush=True)
        """
    )
    processes = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [process.communicate(timeout=600)[0] for process in processes]
    assert all(process.returncode == 0 for process in processes)
    assert sum(output.count("BUILT") for output in outputs) == 1
    digests = {output.strip().splitlines()[-1] for output in outputs}
    assert len(digests) == 1
    environments = [p for p in env_dir.iterdir() if not p.name.startswith(".")]
    assert len(environments) == 1


def test_prune_keeps_what_is_named_and_removes_the_rest(
    tmp_path: Path, env_dir: Path, wheels: Path
) -> None:
    assert OWN is not None
    one = offline_requirements(tmp_path / "one.txt", wheels, "tinypkg==1.0")
    two = offline_requirements(tmp_path / "two.txt", wheels, "tinypkg==2.0")
    kept = build_environment(spec_of(one), OWN, task_class="one")
    dropped = build_environment(spec_of(two), OWN, task_class="two")
    leftover = env_dir / f".work-{'0' * 64}-deadbeef"
    leftover.mkdir()
    removed = prune({kept.digest})
    assert dropped.path in removed
    assert leftover in removed
    assert open_environment(kept.digest) is not None
    assert not dropped.path.exists()
    assert not leftover.exists()


def test_python_only_is_an_environment_without_packages(env_dir: Path) -> None:
    assert OWN is not None
    spec = declared_spec(Path("/nonexistent"), None, OWN.version, task_class="bare")
    assert spec is not None
    assert spec.requirements is None
    environment = ready_environment(spec, task_class="bare")
    assert environment.python == OWN.version
    assert built_python_says(environment.executable, "import sys; print(sys.prefix)") == str(
        environment.path
    )


def test_a_python_this_machine_lacks_is_a_typed_error(env_dir: Path, tmp_path: Path) -> None:
    spec = declared_spec(tmp_path, None, "3.99", task_class="future")
    assert spec is not None
    with pytest.raises(PythonUnavailable) as missing:
        ready_environment(spec, task_class="future", manifest=tmp_path / "bench.toml")
    assert missing.value.version == "3.99"
    assert missing.value.task_class == "future"
    assert missing.value.exit_code == 4
    assert "uv python install 3.99" in missing.value.hint
    assert not env_dir.exists()


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("-r other.txt\n", "-r is not allowed"),
        ("-e ./pkg\n", "-e is not allowed"),
        ("./pkg\n", "path or URL without a name"),
        ("tinypkg===\n", "cannot read"),
    ],
)
def test_a_requirements_file_that_cannot_be_used_is_refused_before_uv_runs(
    tmp_path: Path, env_dir: Path, text: str, found: str
) -> None:
    (tmp_path / "req.txt").write_text("tinypkg==1.0\n" + text)
    with pytest.raises(EnvironmentBuildFailed) as refused:
        declared_spec(tmp_path, "req.txt", None, task_class="tiny")
    assert refused.value.step == "requirements"
    assert found in refused.value.output
    assert ":2:" in refused.value.output  # the line
    assert not env_dir.exists()


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo"])
def test_a_requirements_file_that_is_not_a_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "req.txt"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    with pytest.raises(EnvironmentBuildFailed) as refused:
        declared_spec(tmp_path, "req.txt", None, task_class="tiny")
    assert str(path) in refused.value.output


def test_environments_live_in_the_user_cache_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODEGENIE_ENV_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert environments_dir() == tmp_path / "cache" / "codegenie-eval" / "environments"
    monkeypatch.setenv("CODEGENIE_ENV_DIR", "relative/ignored")
    assert environments_dir() == tmp_path / "cache" / "codegenie-eval" / "environments"
    monkeypatch.setenv("CODEGENIE_ENV_DIR", str(tmp_path / "mine"))
    assert environments_dir() == tmp_path / "mine"


def test_a_relative_wheel_directory_is_found_from_where_the_command_runs(
    tmp_path: Path, env_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert OWN is not None
    make_wheel(tmp_path / "wheels", "tinypkg", "1.0", "VERSION = '1.0'\n")
    requirements = tmp_path / "envs" / "req.txt"
    requirements.parent.mkdir()
    requirements.write_text("tinypkg==1.0\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UV_FIND_LINKS", "wheels")
    monkeypatch.setenv("UV_NO_INDEX", "1")
    environment = build_environment(spec_of(requirements), OWN, task_class="tiny")
    assert (
        built_python_says(environment.executable, "import tinypkg; print(tinypkg.VERSION)") == "1.0"
    )


def test_pip_settings_reach_uv_only_when_uv_is_not_configured(tmp_path: Path) -> None:
    from codegenie.eval._env.pip_config import _uv_config_files, uv_environment

    base = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    if any(os.path.isfile(path) for path in _uv_config_files(base)):
        pytest.skip("this machine has a uv configuration file of its own")
    pip = {
        **base,
        "PIP_INDEX_URL": "https://mirror.example/simple",
        "PIP_EXTRA_INDEX_URL": "https://a.example/simple https://b.example/simple",
        "PIP_NO_INDEX": "true",
    }
    given = uv_environment(pip)
    assert given["UV_INDEX_URL"] == "https://mirror.example/simple"
    assert given["UV_EXTRA_INDEX_URL"] == "https://a.example/simple https://b.example/simple"
    assert given["UV_NO_INDEX"] == "1"
    assert given["UV_INDEX_STRATEGY"] == "unsafe-best-match"  # pip's rule for several indexes
    configured = uv_environment({**pip, "UV_INDEX_URL": "https://uv.example/simple"})
    assert configured["UV_INDEX_URL"] == "https://uv.example/simple"
    assert "UV_EXTRA_INDEX_URL" not in configured
    assert "UV_INDEX_STRATEGY" not in configured
