"""codegenie.eval.manifest: the bench.toml model and reading it with located errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from codegenie.eval import BenchManifest, ManifestEntry
from codegenie.eval.errors import BenchManifestInvalid, BenchManifestNotFound, TaskClassNotFound
from codegenie.eval.manifest import clear_manifest_cache, load_manifest_cached
from codegenie.eval.naming import RESERVED_SLUGS

REPO = Path(__file__).resolve().parent.parent
TOML_TEST = Path(__file__).resolve().parent / "data" / "toml-test" / "invalid"

GOOD = """\
#:schema ./docs/bench.schema.json
schema-version = 1

[task-classes.vuln-remediation]
module = "bench.vuln_remediation.registration"
root = "bench"

[task-classes.deep-one]
module = "suite.group.deep_one.registration"
root = "packs/suite"
"""


def load_text(tmp_path: Path, text: str | bytes) -> BenchManifest:
    path = tmp_path / "bench.toml"
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8", newline="")
    else:
        path.write_bytes(text)
    return BenchManifest.load(path)


def problems_of(tmp_path: Path, text: str | bytes) -> list[tuple[int, int, str, str]]:
    with pytest.raises(BenchManifestInvalid) as exc:
        load_text(tmp_path, text)
    assert exc.value.path == (tmp_path / "bench.toml").absolute()
    return [(p.line, p.column, p.key, p.message) for p in exc.value.problems]


def test_valid_manifest_loads_in_file_order(tmp_path: Path) -> None:
    """A valid manifest gives its entries, in file order, with their roots."""
    manifest = load_text(tmp_path, GOOD)
    assert manifest.schema_version == 1
    assert manifest.slugs() == ("vuln-remediation", "deep-one")
    entry = manifest.entry("deep-one")
    assert entry == ManifestEntry(module="suite.group.deep_one.registration", root="packs/suite")
    assert entry.package_parts == ("group", "deep_one")
    assert manifest.root_dir("deep-one") == tmp_path.absolute() / "packs" / "suite"
    assert entry.registration_file(Path("/r")) == Path("/r/group/deep_one/registration.py")
    assert manifest.path == (tmp_path / "bench.toml").absolute()
    assert "deep-one" in manifest
    assert next(iter(manifest))[0] == "vuln-remediation"


@pytest.mark.shipped_bench
def test_shipped_manifest_is_valid_and_declares_task_classes() -> None:
    """The repository's bench.toml validates and declares at least one task class."""
    manifest = BenchManifest.load(REPO / "bench.toml")
    assert manifest.slugs()


def test_position_of_an_entry_is_its_table_header(tmp_path: Path) -> None:
    """position() gives the line of [task-classes.<slug>] and of each key."""
    manifest = load_text(tmp_path, GOOD)
    assert manifest.position("task-classes", "deep-one") == (8, 1)
    assert manifest.position("task-classes", "deep-one", "root") == (10, 1)


def test_entry_of_unknown_slug_suggests(tmp_path: Path) -> None:
    """entry() of a missing slug raises TaskClassNotFound with suggestions."""
    manifest = load_text(tmp_path, GOOD)
    with pytest.raises(TaskClassNotFound) as exc:
        manifest.entry("vuln-remediaton")
    assert exc.value.suggestions == ("vuln-remediation",)
    assert exc.value.looked_up_in == str(manifest.path)


HEADER = "schema-version = 1\n\n[task-classes.foo]\n"

# (document, expected (line, column, key), a piece of the message)
BAD_DOCUMENTS = [
    pytest.param(
        "schema-version = 2\n",
        (1, 18, "schema-version"),
        "unsupported schema-version 2",
        id="version",
    ),
    pytest.param(
        "schema-version = true\n",
        (1, 18, "schema-version"),
        "expected an integer, got a boolean",
        id="version-bool",
    ),
    pytest.param(
        'schema-version = "1"\n',
        (1, 18, "schema-version"),
        "expected an integer, got a string",
        id="version-str",
    ),
    pytest.param(
        "[task-classes]\n", (1, 1, ""), "missing required key 'schema-version'", id="no-version"
    ),
    pytest.param(
        "schema-version = 1\nschema-versoin = 1\n",
        (2, 1, "schema-versoin"),
        "did you mean 'schema-version'?",
        id="unknown-top-key",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo.registration"\nroot = "bench"\nmodul = "x"\n',
        (6, 1, "task-classes.foo.modul"),
        "unknown key 'modul'; did you mean 'module'?",
        id="unknown-entry-key",
    ),
    pytest.param(
        HEADER + 'root = "bench"\n',
        (3, 1, "task-classes.foo"),
        "missing required key 'module'",
        id="missing-module",
    ),
    pytest.param(
        HEADER + 'module = 42\nroot = "bench"\n',
        (4, 10, "task-classes.foo.module"),
        "expected a string, got an integer",
        id="module-type",
    ),
    pytest.param(
        "schema-version = 1\ntask-classes = 3\n",
        (2, 16, "task-classes"),
        "expected a table, got an integer",
        id="task-classes-type",
    ),
    pytest.param(
        "schema-version = 1\n[task-classes]\nfoo = 3\n",
        (3, 7, "task-classes.foo"),
        "expected a table, got an integer",
        id="entry-type",
    ),
    pytest.param(
        HEADER + 'module = "os"\nroot = "bench"\n',
        (4, 10, "task-classes.foo.module"),
        "at least three parts",
        id="module-os",
    ),
    pytest.param(
        HEADER + 'module = "os.path.registration"\nroot = "bench"\n',
        (4, 10, "task-classes.foo.module"),
        "is not under root 'bench'",
        id="module-outside-root",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo.setup"\nroot = "bench"\n',
        (4, 10, "task-classes.foo.module"),
        "must end in '.registration'",
        id="module-not-registration",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo-bar.registration"\nroot = "bench"\n',
        (4, 10, "task-classes.foo.module"),
        "'foo-bar' is not an ASCII Python identifier",
        id="module-hyphen",
    ),
    pytest.param(
        HEADER + 'module = "bench.class.registration"\nroot = "bench"\n',
        (4, 10, "task-classes.foo.module"),
        "'class' is a Python keyword",
        id="module-keyword",
    ),
    pytest.param(
        HEADER + 'module = "bench.café.registration"\nroot = "bench"\n',
        (4, 10, "task-classes.foo.module"),
        "not an ASCII Python identifier",
        id="module-non-ascii",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo.registration"\nroot = "/abs/bench"\n',
        (5, 8, "task-classes.foo.root"),
        "not absolute",
        id="root-absolute",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo.registration"\nroot = "../bench"\n',
        (5, 8, "task-classes.foo.root"),
        "no '..'",
        id="root-climbs",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo.registration"\nroot = "a/../bench"\n',
        (5, 8, "task-classes.foo.root"),
        "no '..'",
        id="root-climbs-inside",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo.registration"\nroot = "./bench"\n',
        (5, 8, "task-classes.foo.root"),
        "normalized",
        id="root-dot",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo.registration"\nroot = "bench\\\\x"\n',
        (5, 8, "task-classes.foo.root"),
        "'/' as separator",
        id="root-backslash",
    ),
    pytest.param(
        HEADER + 'module = "bench.foo.registration"\nroot = ""\n',
        (5, 8, "task-classes.foo.root"),
        "is empty",
        id="root-empty",
    ),
    pytest.param(
        HEADER + 'module = "my-bench.foo.registration"\nroot = "my-bench"\n',
        (4, 10, "task-classes.foo.module"),
        "not an ASCII Python identifier",
        id="root-not-identifier",
    ),
    pytest.param(
        'schema-version = 1\n[task-classes.Foo]\nmodule = "bench.foo.registration"\nroot = "bench"\n',
        (2, 1, "task-classes.Foo"),
        "invalid task-class slug 'Foo': wrong case",
        id="slug-case",
    ),
    pytest.param(
        'schema-version = 1\n[task-classes."a.b"]\nmodule = "bench.a_b.registration"\nroot = "bench"\n',
        (2, 1, 'task-classes."a.b"'),
        "non-slug character",
        id="slug-dot",
    ),
    pytest.param(
        'schema-version = 1\n[task-classes.import]\nmodule = "bench.imp.registration"\nroot = "bench"\n',
        (2, 1, "task-classes.import"),
        "reserved name",
        id="slug-reserved",
    ),
    pytest.param(
        'schema-version = 1\n[task-classes]\nfoo = { module = "bench.foo.registration", root = 7 }\n',
        (3, 51, "task-classes.foo.root"),
        "expected a string, got an integer",
        id="inline-table",
    ),
    pytest.param(
        'schema-version = 1\ntask-classes.foo.module = "bench.foo.registration"\n'
        "task-classes.foo.root = 1.5\n",
        (3, 25, "task-classes.foo.root"),
        "expected a string, got a float",
        id="dotted-keys",
    ),
    pytest.param(
        'schema-version = 1\n[task-classes.foo]\nmodule = "bench.foo.registration"\n'
        "root = 1979-05-27\n",
        (4, 8, "task-classes.foo.root"),
        "expected a string, got a date or time",
        id="date",
    ),
    pytest.param(
        'schema-version = 1\n[task-classes.foo]\nmodule = ["bench.foo.registration"]\n'
        'root = "bench"\n',
        (3, 10, "task-classes.foo.module"),
        "expected a string, got an array",
        id="array",
    ),
    pytest.param(
        "schema-version = 1\n[task-classes\n", (2, 14, ""), "TOML syntax error", id="syntax"
    ),
    pytest.param(
        'schema-version = 1\nname = "unterminated\n',
        (2, 21, ""),
        "TOML syntax error",
        id="syntax-string",
    ),
    pytest.param(
        b"schema-version = 1\n# caf\xe9\n", (2, 6, ""), "not valid UTF-8 (byte e9)", id="latin-1"
    ),
    pytest.param(b"\xef\xbb\xbfschema-version = 1\n", (1, 1, ""), "byte-order mark", id="bom"),
    pytest.param(b"\x00\x01\x02\xff\xfe", (1, 4, ""), "not valid UTF-8", id="binary"),
    pytest.param("schema-version = 1\r\nx = 1\r", (2, 6, ""), "TOML syntax error", id="bare-cr"),
]


@pytest.mark.parametrize(("document", "where", "message"), BAD_DOCUMENTS)
def test_bad_manifest_is_reported_at_its_line_and_column(
    tmp_path: Path, document: str | bytes, where: tuple[int, int, str], message: str
) -> None:
    """Each kind of bad input gives BenchManifestInvalid with file, line, column and key."""
    problems = problems_of(tmp_path, document)
    located = [(line, column, key) for line, column, key, _ in problems]
    assert where in located, problems
    text = next(m for line, column, key, m in problems if (line, column, key) == where)
    assert message in text


def test_every_problem_of_the_file_is_reported_at_once(tmp_path: Path) -> None:
    """A file with many problems lists all of them, sorted by position, not just the first."""
    document = textwrap.dedent(
        """\
        schema-version = 3

        [task-classes.vuln-remediation]
        module = "bench.vuln_remediation.registration"
        root = "bench"
        extra = 1

        [task-classes.Bad]
        module = "os"
        root = "/abs"

        [task-classes.copy]
        module = "bench.vuln_remediation.registration"
        root = "../bench"

        [task-classes.empty]
        """
    )
    problems = problems_of(tmp_path, document)
    assert [(line, key) for line, _, key, _ in problems] == [
        (1, "schema-version"),
        (6, "task-classes.vuln-remediation.extra"),
        (8, "task-classes.Bad"),
        (9, "task-classes.Bad.module"),
        (10, "task-classes.Bad.root"),
        (13, "task-classes.copy.module"),
        (14, "task-classes.copy.root"),
        (16, "task-classes.empty"),
        (16, "task-classes.empty"),
    ]
    duplicate = next(m for line, _, _, m in problems if line == 13)
    assert "already the module of 'vuln-remediation'" in duplicate


@pytest.mark.parametrize(
    ("written", "meant"),
    [("modul", "module"), ("rot", "root"), ("modules", "module"), ("roots", "root")],
)
def test_a_misspelt_required_key_is_one_problem(tmp_path: Path, written: str, meant: str) -> None:
    """`modul = …` is one problem (unknown key, did you mean 'module'?), not also a missing 'module'."""
    entry = {"module": "bench.aa.registration", "root": "bench"}
    entry[written] = entry.pop(meant)
    document = "schema-version = 1\n\n" + tomli_w.dumps({"task-classes": {"aa": entry}})
    problems = problems_of(tmp_path, document)
    assert [(key, message) for _, _, key, message in problems] == [
        (f"task-classes.aa.{written}", f"unknown key {written!r}; did you mean {meant!r}?")
    ]


def test_a_top_level_key_named_like_pydantics_key_marker_is_an_unknown_key(tmp_path: Path) -> None:
    """A top-level key literally named "[key]" is reported as an unknown key, never a crash."""
    problems = problems_of(tmp_path, 'schema-version = []\n"[key]" = []\n')
    assert [(line, key) for line, _, key, _ in problems] == [(1, "schema-version"), (2, '"[key]"')]


def test_an_unrelated_unknown_key_leaves_the_missing_key_reported(tmp_path: Path) -> None:
    """An unknown key that is no misspelling of the missing one: both problems are listed."""
    document = 'schema-version = 1\n[task-classes.aa]\nroot = "bench"\ncolour = "red"\n'
    messages = [message for _, _, _, message in problems_of(tmp_path, document)]
    assert "missing required key 'module'" in messages
    assert any(m.startswith("unknown key 'colour'") for m in messages)


def test_two_slugs_with_one_module_is_an_error(tmp_path: Path) -> None:
    """Two slugs naming the same module are refused, at the second one's module value."""
    document = HEADER + 'module = "bench.foo.registration"\nroot = "bench"\n'
    document += '[task-classes.bar]\nmodule = "bench.foo.registration"\nroot = "bench"\n'
    assert problems_of(tmp_path, document) == [
        (
            7,
            10,
            "task-classes.bar.module",
            "module 'bench.foo.registration' is already the module of 'foo'; "
            "each task class needs its own module",
        )
    ]


def test_rendered_error_uses_the_compiler_convention(tmp_path: Path) -> None:
    """str(error) lists FILE:LINE:COL: KEY: MESSAGE lines."""
    with pytest.raises(BenchManifestInvalid) as exc:
        load_text(tmp_path, HEADER + 'module = 42\nroot = "bench"\n')
    path = tmp_path / "bench.toml"
    assert f"{path}:4:10: task-classes.foo.module: expected a string, got an integer" in str(
        exc.value
    )


TOML_TEST_FILES = sorted(TOML_TEST.rglob("*.toml"))


def test_toml_test_suite_is_present() -> None:
    """The vendored toml-test invalid set is complete (499 documents)."""
    assert len(TOML_TEST_FILES) == 499


@pytest.mark.parametrize("path", TOML_TEST_FILES, ids=lambda p: str(p.relative_to(TOML_TEST)))
def test_every_invalid_toml_test_document_is_a_located_manifest_error(path: Path) -> None:
    """Each invalid TOML document of the toml-test suite is BenchManifestInvalid with a line."""
    data = path.read_bytes()
    with pytest.raises(BenchManifestInvalid) as exc:
        BenchManifest.from_bytes(data, path)
    assert exc.value.problems
    line_count = data.count(b"\n") + 1
    for problem in exc.value.problems:
        assert 1 <= problem.line <= line_count
        assert problem.column >= 1


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    """load() of a missing file raises BenchManifestNotFound with that path."""
    with pytest.raises(BenchManifestNotFound) as exc:
        BenchManifest.load(tmp_path / "bench.toml")
    assert exc.value.path == tmp_path / "bench.toml"


def test_directory_instead_of_file_is_invalid_and_says_so(tmp_path: Path) -> None:
    """A directory named as the manifest is refused at line 1, saying it is a directory."""
    (tmp_path / "bench.toml").mkdir()
    with pytest.raises(BenchManifestInvalid) as exc:
        BenchManifest.load(tmp_path / "bench.toml")
    [problem] = exc.value.problems
    assert (problem.line, problem.column) == (1, 1)
    assert problem.message == "the file is a directory, not a regular file"


def test_unreadable_file_is_invalid_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest that cannot be read (permissions, I/O error) is a located error."""
    path = tmp_path / "bench.toml"
    path.write_text(GOOD)

    def denied(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("codegenie.eval._paths.os.open", denied)
    with pytest.raises(BenchManifestInvalid) as exc:
        BenchManifest.load(path)
    assert exc.value.problems[0].message == "cannot read the file: Permission denied"


def test_discover_finds_the_nearest_manifest_upwards(tmp_path: Path) -> None:
    """discover() reads the nearest bench.toml in the start directory or a parent."""
    (tmp_path / "bench.toml").write_text(GOOD)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert BenchManifest.discover(deep).path == (tmp_path / "bench.toml").absolute()


def test_discover_without_manifest_names_the_first_place_looked(tmp_path: Path) -> None:
    """BenchManifestNotFound.path is <start>/bench.toml."""
    with pytest.raises(BenchManifestNotFound) as exc:
        BenchManifest.discover(tmp_path)
    assert exc.value.path == tmp_path.absolute() / "bench.toml"


def test_cached_load_reuses_until_the_file_changes(tmp_path: Path) -> None:
    """load_manifest_cached returns the same object until the file changes, then re-reads."""
    file = tmp_path / "bench.toml"
    file.write_text(GOOD)
    path = str(file)
    first = load_manifest_cached(path)
    assert load_manifest_cached(path) is first
    file.write_text(GOOD.replace("deep-one", "deep-two"))
    second = load_manifest_cached(path)
    assert second.slugs() == ("vuln-remediation", "deep-two")
    clear_manifest_cache()
    assert load_manifest_cached(path) is not second


def test_model_refuses_the_python_field_names_in_toml(tmp_path: Path) -> None:
    """schema_version (underscore) is an unknown key in the file, even though Python accepts it."""
    problems = problems_of(tmp_path, "schema_version = 1\n")
    assert (1, 1, "schema_version") in [(line, col, key) for line, col, key, _ in problems]


def test_model_validates_python_data_with_all_rules() -> None:
    """BenchManifest built in Python enforces the same rules (duplicates included)."""
    entry: dict[str, object] = {"module": "bench.foo.registration", "root": "bench"}
    manifest = BenchManifest(
        schema_version=1, task_classes={"foo": ManifestEntry.model_validate(entry)}
    )
    assert manifest.slugs() == ("foo",)
    with pytest.raises(ValueError, match="both name module"):
        BenchManifest.model_validate(
            {"schema-version": 1, "task-classes": {"foo": entry, "bar": entry}}
        )


# -- round trips -----------------------------------------------------------------

IDENT = st.from_regex(r"[a-z][a-z0-9]{0,6}\Z", fullmatch=True).filter(
    lambda s: (
        s not in RESERVED_SLUGS
        and s not in {"registration"}
        and not __import__("keyword").iskeyword(s)
    )
)
SLUGS = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]\Z", fullmatch=True).filter(
    lambda s: s not in RESERVED_SLUGS
)


@st.composite
def manifests(draw: st.DrawFn) -> BenchManifest:
    slugs = draw(st.lists(SLUGS, unique=True, max_size=6))
    root_dirs = draw(st.lists(IDENT, min_size=0, max_size=2))
    package = draw(IDENT)
    root = "/".join([*root_dirs, package])
    entries = {
        slug: ManifestEntry(module=f"{package}.{slug.replace('-', '_')}.registration", root=root)
        for slug in slugs
    }
    return BenchManifest(schema_version=1, task_classes=entries)


@given(manifests())
def test_manifest_toml_manifest_round_trip(manifest: BenchManifest) -> None:
    """Any valid manifest written as TOML reads back equal (property)."""
    text = manifest.to_toml()
    again = BenchManifest.from_bytes(text.encode(), Path("/virtual/bench.toml"))
    assert again.task_classes == manifest.task_classes
    assert again.schema_version == manifest.schema_version


STYLES = st.sampled_from(["tables", "inline", "dotted", "quoted"])


def _styled(manifest: BenchManifest, style: str, comments: bool) -> str:
    lines = ["# generated", "schema-version = 1"]
    if style == "dotted":
        for slug, entry in manifest:
            lines.append(f'task-classes.{slug}.module = "{entry.module}"')
            lines.append(
                f"task-classes.{slug}.root = {tomli_w.dumps({'r': entry.root})[4:].strip()}"
            )
    elif style == "inline":
        lines.append("[task-classes]")
        for slug, entry in manifest:
            lines.append(f"{slug} = {{ module = \"{entry.module}\", root = '{entry.root}' }}")
    else:
        for slug, entry in manifest:
            key = f'"{slug}"' if style == "quoted" else slug
            lines.append(f"[ task-classes . {key} ]  # entry")
            if comments:
                lines.append('# module = "not.this.one"')
            lines.append(f'module = """{entry.module}"""')
            lines.append(f"root = '{entry.root}'")
    return "\n".join(lines) + "\n"


@settings(max_examples=60)
@given(manifests(), STYLES, st.booleans())
def test_positions_point_at_the_key_in_any_style(
    manifest: BenchManifest, style: str, comments: bool
) -> None:
    """Whatever the TOML style, each key's reported line is the line that writes it (property)."""
    text = _styled(manifest, style, comments)
    loaded = BenchManifest.from_bytes(text.encode(), Path("/virtual/bench.toml"))
    assert loaded.task_classes == manifest.task_classes
    lines = text.split("\n")
    for slug, entry in manifest:
        line, column = loaded.position("task-classes", slug, "module")
        assert (
            lines[line - 1][column - 1 :]
            .lstrip("[ ")
            .startswith(("module", "task-classes", slug, f'"{slug}"'))
        )
        assert entry.module in lines[line - 1]
        root_line, _ = loaded.position("task-classes", slug, "root")
        assert entry.root in lines[root_line - 1]
