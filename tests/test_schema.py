"""The JSON Schema of bench.toml: generated from the model, committed, used by editors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from codegenie.eval.manifest import json_schema

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "docs" / "bench.schema.json"


def _taplo() -> str:
    found = shutil.which("taplo") or shutil.which("taplo", path=str(Path(sys.executable).parent))
    assert found, "taplo (a test dependency, `pip install -e .[test]`) is not installed"
    return found


def test_committed_schema_matches_the_model() -> None:
    """docs/bench.schema.json is exactly what the model generates (drift test)."""
    generated = json.dumps(json_schema(), indent=2) + "\n"
    assert COMMITTED.read_text(encoding="utf-8") == generated, (
        "docs/bench.schema.json is stale; regenerate it with "
        "`python -m codegenie.eval schema > docs/bench.schema.json`"
    )


@pytest.mark.shipped_bench
def test_shipped_manifest_points_editors_at_the_schema() -> None:
    """bench.toml starts with the #:schema directive naming the committed schema."""
    first_line = (REPO / "bench.toml").read_text(encoding="utf-8").splitlines()[0]
    assert first_line == "#:schema ./docs/bench.schema.json"


def _editor_copy(tmp_path: Path, text: str) -> Path:
    (tmp_path / "docs").mkdir(parents=True)
    shutil.copy(COMMITTED, tmp_path / "docs" / "bench.schema.json")
    manifest = tmp_path / "bench.toml"
    manifest.write_text(text, encoding="utf-8")
    return manifest


def _taplo_check(manifest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_taplo(), "check", "--no-auto-config", manifest.name],
        cwd=manifest.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.shipped_bench
def test_taplo_accepts_the_shipped_manifest(tmp_path: Path) -> None:
    """The editor engine (taplo) validates the shipped bench.toml against the schema."""
    manifest = _editor_copy(tmp_path, (REPO / "bench.toml").read_text(encoding="utf-8"))
    result = _taplo_check(manifest)
    assert result.returncode == 0, result.stderr


A_MANIFEST = """\
#:schema ./docs/bench.schema.json
schema-version = 1

[task-classes.vuln-remediation]
module = "bench.vuln_remediation.registration"
root = "bench"

[task-classes.secret-rotation]
module = "bench.secret_rotation.registration"
root = "bench"
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'module = "bench.vuln_remediation.registration"',
            "module = 42",
            'is not of type "string"',
        ),
        ('root = "bench"', 'root = "../bench"', "does not match"),
        ("[task-classes.vuln-remediation]", "[task-classes.Vuln]", ""),
        ('root = "bench"', 'root = "bench"\nmodul = "x"', ""),
    ],
)
def test_taplo_rejects_a_broken_copy_at_the_right_line(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    """taplo flags a broken manifest, at the line that is wrong."""
    assert _taplo_check(_editor_copy(tmp_path / "good", A_MANIFEST)).returncode == 0
    broken = A_MANIFEST.replace(old, new, 1)
    line = broken.splitlines().index(new.splitlines()[-1]) + 1
    manifest = _editor_copy(tmp_path, broken)
    result = _taplo_check(manifest)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"bench.toml:{line}:" in output, output
    assert message in output


VALIDATOR = jsonschema.Draft202012Validator(json_schema())

DOCUMENTS = [
    ("schema-version = 1\n", True),
    (
        'schema-version = 1\n[task-classes.a-b]\nmodule = "bench.a_b.registration"\nroot = "bench"\n',
        True,
    ),
    (
        'schema-version = 1\n[task-classes.a-b]\nmodule = "x.a_b.registration"\nroot = "p/q/x"\n',
        True,
    ),
    ("schema-version = 2\n", False),
    ("schema-version = true\n", False),
    ("[task-classes]\n", False),
    ("schema-version = 1\nextra = 1\n", False),
    (
        'schema-version = 1\n[task-classes.Foo]\nmodule = "bench.foo.registration"\nroot = "bench"\n',
        False,
    ),
    (
        'schema-version = 1\n[task-classes.class]\nmodule = "bench.foo.registration"\nroot = "bench"\n',
        False,
    ),
    ('schema-version = 1\n[task-classes.foo]\nmodule = "os"\nroot = "bench"\n', False),
    (
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = "/bench"\n',
        False,
    ),
    (
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = "../bench"\n',
        False,
    ),
    (
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = "./bench"\n',
        False,
    ),
    ('schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\n', False),
    (
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = "bench"\n'
        'command = ["sh", "{rubric}", "{case}", "{candidate}"]\n',
        True,
    ),
    (
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = "bench"\n'
        "command = []\n",
        False,
    ),
    (
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = "bench"\n'
        'command = ["sh", 1]\n',
        False,
    ),
    (
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = "bench"\n'
        'command = "sh {rubric} {case} {candidate}"\n',
        False,
    ),
    (
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = "bench"\nx = 1\n',
        False,
    ),
]


@pytest.mark.parametrize(("document", "valid"), DOCUMENTS)
def test_json_schema_agrees_with_the_model(tmp_path: Path, document: str, valid: bool) -> None:
    """Editors (the JSON Schema) and the loader (the model) accept and refuse the same documents."""
    from codegenie.eval import BenchManifest
    from codegenie.eval.errors import BenchManifestInvalid

    assert VALIDATOR.is_valid(tomllib.loads(document)) is valid
    path = tmp_path / "bench.toml"
    path.write_text(document)
    if valid:
        BenchManifest.load(path)
    else:
        with pytest.raises(BenchManifestInvalid):
            BenchManifest.load(path)
