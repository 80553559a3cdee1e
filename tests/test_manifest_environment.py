"""An entry's `environment` (a requirements file) and `python` (a version): the model, the schema, the cache."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from codegenie.eval._cache.served import ServedManifest
from codegenie.eval._env import python as env_python
from codegenie.eval._manifest import model as model_module
from codegenie.eval._manifest.model import (
    MAX_ENVIRONMENT_LENGTH,
    BenchManifest,
    ManifestEntry,
    suggest_environment,
    suggest_python,
)
from codegenie.eval._manifest.schema import json_schema
from codegenie.eval.errors import BenchManifestInvalid
from codegenie.eval.manifest import clear_manifest_cache, load_manifest_cached

ENTRY = {"module": "bench.np_task.registration", "root": "bench"}
HEAD = 'schema-version = 1\n\n[task-classes.np-task]\nmodule = "bench.np_task.registration"\nroot = "bench"\n'

# A path component: no "/", "\\" or control character, and not "." or "..".
COMPONENT = st.text(
    st.characters(
        exclude_categories=["Cs"],
        exclude_characters="/\\",
        min_codepoint=0x20,
    ).filter(lambda c: not 0x7F <= ord(c) <= 0x9F),
    min_size=1,
    max_size=12,
).filter(lambda part: part not in {".", ".."})
# A first component like "C:" makes a path absolute on Windows, which the model refuses as
# absolute: not a relative path, so not one of these.
RELATIVE = (
    st.lists(COMPONENT, min_size=1, max_size=6)
    .map("/".join)
    .filter(lambda path: not re.match(r"^[A-Za-z]:", path))
)
NOT_A_DRIVE = st.lists(COMPONENT, max_size=3).filter(
    lambda parts: not parts or not re.match(r"^[A-Za-z]:", parts[0])
)


def entry(**keys: object) -> ManifestEntry:
    return ManifestEntry.model_validate({**ENTRY, **keys})


def problems(text: str, tmp_path: Path) -> list[tuple[int, int, str, str]]:
    """Return (line, column, key, message) of each problem of the manifest ``text``."""
    path = tmp_path / "bench.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BenchManifestInvalid) as raised:
        BenchManifest.load(path)
    return [(p.line, p.column, p.key, p.message) for p in raised.value.problems]


# -- the model -------------------------------------------------------------------------------


def test_both_keys_are_optional_and_unset_by_default() -> None:
    """An entry without them has neither: the task class uses the harness's own environment."""
    plain = entry()
    assert (plain.environment, plain.python) == (None, None)
    assert "environment" not in plain.model_fields_set


def test_both_keys_are_read_under_their_exact_names() -> None:
    """`environment` and `python` are the TOML keys; no alias or other spelling is taken."""
    both = entry(environment="envs/np-task.txt", python="3.12")
    assert (both.environment, both.python) == ("envs/np-task.txt", "3.12")
    for wrong in ("requirements", "python-version", "python_version", "env"):
        with pytest.raises(ValidationError):
            entry(**{wrong: "3.12"})


def test_an_entry_is_frozen() -> None:
    """Like every field, the new ones cannot be changed once validated."""
    both = entry(environment="envs/a.txt", python="3.12")
    with pytest.raises(ValidationError):
        both.python = "3.13"  # type: ignore[misc]


@given(RELATIVE)
def test_any_normalized_relative_path_inside_is_accepted(path: str) -> None:
    """Any relative, normalized POSIX path without control characters is an environment."""
    assert entry(environment=path).environment == path


@given(NOT_A_DRIVE, st.lists(COMPONENT, max_size=3))
def test_any_path_with_dot_dot_is_refused(before: list[str], after: list[str]) -> None:
    """A `..` anywhere would leave the manifest's directory: refused, whatever surrounds it."""
    path = "/".join([*before, "..", *after])
    with pytest.raises(ValidationError, match=r"must stay inside the manifest's directory"):
        entry(environment=path)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("", "is empty"),
        ("/etc/requirements.txt", "not absolute"),
        ("C:/envs/a.txt", "not absolute"),
        ("envs\\a.txt", "must use '/' as separator"),
        ("envs/./a.txt", "must be a normalized path"),
        ("envs//a.txt", "must be a normalized path"),
        ("envs/", "must be a normalized path"),
        ("./a.txt", "must be a normalized path"),
        ("envs/a\n.txt", "contains a control character (U+000A)"),
        ("envs/a\x85.txt", "contains a control character (U+0085)"),
        ("e" * (MAX_ENVIRONMENT_LENGTH + 1), f"at most {MAX_ENVIRONMENT_LENGTH} are allowed"),
    ],
)
def test_a_bad_environment_is_refused_with_its_reason(value: str, said: str) -> None:
    """Each rule of `root` that is about the path holds for `environment`, and says which."""
    with pytest.raises(ValidationError) as raised:
        entry(environment=value)
    assert said in str(raised.value)


def test_the_longest_environment_is_accepted() -> None:
    """The length bound is inclusive."""
    longest = "e" * MAX_ENVIRONMENT_LENGTH
    assert entry(environment=longest).environment == longest


@given(
    st.integers(0, 999).map(str),
    st.one_of(st.none(), st.integers(0, 999).map(str)),
)
def test_any_three_dot_version_is_accepted(minor: str, micro: str | None) -> None:
    """`3.N` and `3.N.M` (up to three digits each) are versions."""
    version = f"3.{minor}" + (f".{micro}" if micro is not None else "")
    assert entry(python=version).python == version


@pytest.mark.parametrize(
    "value", ["3", "2.7", "3.", "3.12.", "3.12.1.1", "3.1234", "python3.12", " 3.12", ">=3.12", ""]
)
def test_a_python_that_is_no_version_is_refused(value: str) -> None:
    """Anything but `3.N` or `3.N.M` is refused, saying how to write one."""
    with pytest.raises(ValidationError, match=r'write "3\.12" \(any 3\.12\) or "3\.12\.1"'):
        entry(python=value)


@pytest.mark.parametrize("value", [3.12, 3, True, ["3.12"], {"v": "3.12"}])
def test_python_must_be_a_string(value: object) -> None:
    """Strict: a number is not a version (3.10 would be 3.1)."""
    with pytest.raises(ValidationError, match="string"):
        entry(python=value)


@pytest.mark.parametrize("value", [1, True, ["a.txt"]])
def test_environment_must_be_a_string(value: object) -> None:
    with pytest.raises(ValidationError, match="string"):
        entry(environment=value)


def test_the_version_pattern_is_the_environment_s() -> None:
    """The model (beneath `_env`, which it cannot import) states the same pattern as `_env`."""
    assert model_module.PYTHON_VERSION_PATTERN == env_python.VERSION_PATTERN


@given(st.text(max_size=12))
def test_the_model_and_env_agree_on_every_version(text: str) -> None:
    """What the model accepts is what `_env.python.valid_version` accepts."""
    try:
        entry(python=text)
    except ValidationError:
        accepted = False
    else:
        accepted = True
    assert accepted is env_python.valid_version(text)


# -- located problems, with what was meant -----------------------------------------------------


def test_a_float_python_is_a_type_error_suggesting_the_string(tmp_path: Path) -> None:
    """`python = 3.10` is a float (3.1): the problem, at the value, suggests the string as written."""
    found = problems(HEAD + "python = 3.10\n", tmp_path)
    assert found == [
        (
            6,
            10,
            "task-classes.np-task.python",
            'expected a string, got a float; did you mean python = "3.10"?',
        )
    ]


def test_an_integer_python_gets_no_suggestion(tmp_path: Path) -> None:
    """`python = 3` is no version either way: the type error alone."""
    found = problems(HEAD + "python = 3\n", tmp_path)
    assert found == [(6, 10, "task-classes.np-task.python", "expected a string, got an integer")]


def test_a_spelled_out_python_suggests_the_version(tmp_path: Path) -> None:
    found = problems(HEAD + 'python = "python3.12"\n', tmp_path)
    assert len(found) == 1
    line, column, key, message = found[0]
    assert (line, column, key) == (6, 10, "task-classes.np-task.python")
    assert message.endswith('did you mean python = "3.12"?')


def test_an_unnormalized_environment_suggests_the_normal_path(tmp_path: Path) -> None:
    found = problems(HEAD + 'environment = "./envs/np.txt"\n', tmp_path)
    assert found == [
        (
            6,
            15,
            "task-classes.np-task.environment",
            "environment './envs/np.txt' must be a normalized path (no empty or '.' "
            'components); did you mean environment = "envs/np.txt"?',
        )
    ]


def test_an_environment_outside_gets_no_suggestion(tmp_path: Path) -> None:
    found = problems(HEAD + 'environment = "../envs/np.txt"\n', tmp_path)
    assert len(found) == 1
    assert "did you mean" not in found[0][3]
    assert found[0][:2] == (6, 15)


def test_a_misspelt_key_suggests_the_new_keys(tmp_path: Path) -> None:
    """An unknown key close to `environment` or `python` says so, at the key."""
    found = problems(HEAD + 'enviroment = "a.txt"\npyton = "3.12"\n', tmp_path)
    assert [(line, column, message) for line, column, _, message in found] == [
        (6, 1, "unknown key 'enviroment'; did you mean 'environment'?"),
        (7, 1, "unknown key 'pyton'; did you mean 'python'?"),
    ]


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("./a.txt", "a.txt"),
        ("envs\\a.txt", "envs/a.txt"),
        ("envs//a.txt", "envs/a.txt"),
        ("a.txt", None),
        ("/abs/a.txt", None),
        ("../a.txt", None),
        ("", None),
    ],
)
def test_suggest_environment(value: str, meant: str | None) -> None:
    assert suggest_environment(value) == meant


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("python3.12", "3.12"),
        ("cpython-3.12.1", "3.12.1"),
        ("==3.11", "3.11"),
        ("v3.13", "3.13"),
        (" 3.12 ", "3.12"),
        ("3.12", None),
        ("2.7", None),
        ("latest", None),
    ],
)
def test_suggest_python(value: str, meant: str | None) -> None:
    assert suggest_python(value) == meant


# -- the schema ------------------------------------------------------------------------------


def test_the_schema_states_both_keys_as_optional_strings() -> None:
    """Editors see two optional strings with the model's patterns; TOML has no null."""
    entry_schema = json_schema()["properties"]["task-classes"]["additionalProperties"]
    if "$ref" in entry_schema:
        name = entry_schema["$ref"].rsplit("/", 1)[1]
        entry_schema = json_schema()["$defs"][name]
    properties = entry_schema["properties"]
    assert properties["python"]["type"] == "string"
    assert properties["python"]["pattern"] == env_python.VERSION_PATTERN
    assert properties["environment"]["type"] == "string"
    assert properties["environment"]["maxLength"] == MAX_ENVIRONMENT_LENGTH
    assert "default" not in properties["python"]
    assert "environment" not in entry_schema.get("required", [])
    assert properties["environment"]["description"]
    assert properties["python"]["description"]


@pytest.mark.parametrize(
    ("keys", "valid"),
    [
        ({"environment": "envs/a.txt", "python": "3.12.1"}, True),
        ({"python": "3.12"}, True),
        ({"python": "python3.12"}, False),
        ({"python": 3.12}, False),
        ({"environment": "../a.txt"}, False),
        ({"environment": "/a.txt"}, False),
        ({"environment": "a\\b.txt"}, False),
        ({"environment": ""}, False),
    ],
)
def test_the_schema_agrees_with_the_model(keys: dict[str, object], valid: bool) -> None:
    """What an editor flags (the JSON Schema) is what the model refuses, for these keys."""
    document = {"schema-version": 1, "task-classes": {"np-task": {**ENTRY, **keys}}}
    validator = jsonschema.Draft202012Validator(json_schema())
    assert validator.is_valid(json.loads(json.dumps(document))) is valid
    try:
        BenchManifest.model_validate(document, by_alias=True, by_name=False)
    except ValidationError:
        model_valid = False
    else:
        model_valid = True
    assert model_valid is valid


def test_to_toml_leaves_unset_keys_out_and_keeps_set_ones(tmp_path: Path) -> None:
    """TOML has no null: a manifest's TOML omits an unset key, and reads back equal."""
    text = HEAD + 'environment = "envs/a.txt"\npython = "3.12"\n\n[task-classes.bb]\n'
    text += 'module = "bench.bb.registration"\nroot = "bench"\n'
    path = tmp_path / "bench.toml"
    path.write_text(text, encoding="utf-8")
    manifest = BenchManifest.load(path)
    written = manifest.to_toml()
    assert "null" not in written
    assert written.count("python") == 1
    path.write_text(written, encoding="utf-8")
    assert BenchManifest.load(path) == manifest


# -- the cache -------------------------------------------------------------------------------


def test_a_manifest_with_the_keys_keeps_them_when_read_twice(tmp_path: Path) -> None:
    """The cache keeps both keys: such a manifest is served from it the second time, keys kept."""
    text = HEAD + 'environment = "envs/np-task.txt"\npython = "3.12"\n'
    text += '\n[task-classes.bb]\nmodule = "bench.bb.registration"\nroot = "bench"\n'
    path = tmp_path / "bench.toml"
    path.write_text(text, encoding="utf-8")
    for attempt in range(2):
        clear_manifest_cache()  # as a fresh process: the user's cache is all that is left
        manifest = load_manifest_cached(str(path))
        assert isinstance(manifest, ServedManifest) == (attempt == 1)
        assert manifest.entry("np-task").environment == "envs/np-task.txt"
        assert manifest.entry("np-task").python == "3.12"
        assert manifest.entry("bb").python is None
        assert manifest == BenchManifest.load(path)


def test_a_manifest_without_the_keys_is_still_served_from_the_cache(tmp_path: Path) -> None:
    """Entries read back from the cache have neither key: equal to the validated ones."""
    path = tmp_path / "bench.toml"
    path.write_text(HEAD, encoding="utf-8")
    load_manifest_cached(str(path))
    clear_manifest_cache()
    manifest = load_manifest_cached(str(path))
    assert isinstance(manifest, ServedManifest)
    served = manifest.entry("np-task")
    assert (served.environment, served.python) == (None, None)
    assert served == BenchManifest.load(path).entry("np-task")
    assert re.search(r"environment=None", repr(served))
