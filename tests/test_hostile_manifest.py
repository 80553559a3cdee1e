"""Hostile manifest bytes and files: only BenchManifestInvalid with a line, never a crash or a hang."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import tomllib
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegenie.eval import BenchManifest
from codegenie.eval._manifest.model import MAX_PROBLEMS
from codegenie.eval._toml.fast import parse_plain
from codegenie.eval._toml.limits import MAX_KEY_PARTS, MAX_NESTING, excess
from codegenie.eval._toml.positions import TomlPositions
from codegenie.eval.errors import BenchManifestInvalid, BenchManifestNotFound
from codegenie.eval.manifest import (
    MANIFEST_SIZE_LIMIT,
    json_schema,
    load_manifest_cached,
    read_manifest_bytes,
)

from .factory import make_bench

VIRTUAL = Path("/virtual/bench.toml")
HEADER = "schema-version = 1\n"
ENTRY = '[task-classes.foo]\nmodule = "bench.foo.registration"\nroot = {root}\n'


def invalid(data: bytes | str) -> BenchManifestInvalid:
    """Return the BenchManifestInvalid that from_bytes raises for ``data``."""
    raw = data.encode() if isinstance(data, str) else data
    with pytest.raises(BenchManifestInvalid) as exc:
        BenchManifest.from_bytes(raw, VIRTUAL)
    assert exc.value.problems
    for problem in exc.value.problems:
        assert problem.line >= 1
        assert problem.column >= 1
    return exc.value


def only(error: BenchManifestInvalid) -> tuple[int, int, str]:
    """The single problem of ``error`` as (line, column, message)."""
    [problem] = error.problems
    return problem.line, problem.column, problem.message


def control_free(text: str) -> bool:
    """Whether ``text`` holds no control character at all (Unicode category Cc)."""
    return not any(unicodedata.category(char) == "Cc" for char in text)


# -- nesting, dotted keys, integers ----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "column"),
    [
        ("[" * 3000 + "]" * 3000, 5 + MAX_NESTING),
        ("{a=" * 3000 + "1" + "}" * 3000, 5 + 3 * MAX_NESTING),
        ("[{a=" * 1500 + "1" + "}]" * 1500, 5 + 4 * (MAX_NESTING // 2)),
        ("[" * 3000, 5 + MAX_NESTING),  # never closed: still refused, not a RecursionError
    ],
    ids=["arrays", "inline-tables", "mixed", "unclosed"],
)
def test_nesting_3000_deep_is_refused_at_its_line(value: str, column: int) -> None:
    """Arrays or inline tables nested 3,000 deep are refused where nesting passes the bound."""
    line, col, message = only(invalid(HEADER + "\n# pad\nx = " + value + "\n"))
    assert (line, col) == (4, column)
    assert f"nested more than {MAX_NESTING} deep" in message


def test_nesting_within_the_bound_is_parsed_and_judged_by_the_schema() -> None:
    """Nesting up to the bound goes to tomllib and comes back as an ordinary schema problem."""
    depth = MAX_NESTING
    line, column, message = only(invalid(HEADER + "x = " + "[" * depth + "]" * depth + "\n"))
    assert (line, column) == (2, 1)
    assert message.startswith("unknown key 'x'")


def test_brackets_inside_strings_and_comments_do_not_count() -> None:
    """Brackets in strings (of every kind) and comments are not nesting."""
    many = "[{" * 2000
    text = (
        HEADER + f'# {many}\na = "{many}"\nb = \'{many}\'\nc = """\n{many}\n"""\n'
        f"d = '''{many}'''\n"
    )
    assert excess(text) is None
    problems = invalid(text).problems
    assert [p.message[:15] for p in problems] == [f"unknown key {k!r}" for k in "abcd"]


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "9" * 5000 + "\n",  # the plain layout
        "x = [" + "9" * 5000 + "]\n",  # tomllib's
        "x = -" + "9" * 5000 + "\n",
        "x = 1_" + "0_" * 3000 + "0\n",
        "x = 0x" + "f" * 20000 + "\n",
        "x = 0o" + "7" * 100 + "\n",
        "x = 0b" + "1" * 100 + "\n",
        "x = 9223372036854775808\n",
        "x = -9223372036854775809\n",
        "x = { y = 99999999999999999999 }\n",
    ],
    ids=[
        "plain",
        "array",
        "negative",
        "underscores",
        "hex",
        "octal",
        "binary",
        "int64-max-plus-one",
        "int64-min-minus-one",
        "inline",
    ],
)
def test_integers_beyond_64_bits_are_refused_at_their_line(text: str) -> None:
    """An integer of 5,000 digits (or just past 64 bits) is refused at its line, never a ValueError."""
    line, column, message = only(invalid(HEADER + text))
    assert line == 2
    assert text[column - 1] in "-+0123456789"
    assert "is out of range: TOML integers are 64-bit" in message
    assert len(message) < 200


@pytest.mark.parametrize(
    "literal",
    ["9223372036854775807", "-9223372036854775808", "0x7fffffffffffffff", "0b" + "0" * 90],
)
def test_integers_within_64_bits_are_read(literal: str) -> None:
    """Integers at the edges of the 64-bit range (and long runs of leading zeros) are read."""
    assert excess(f"x = {literal}\n") is None
    assert tomllib.loads(f"x = {literal}\n")["x"] == int(literal, 0)


def test_digits_in_floats_dates_and_strings_are_not_integers() -> None:
    """Long digit runs in floats, strings, comments and dates are not taken for integers."""
    digits = "1" * 5000
    text = (
        f'a = 1.{digits}\nb = "{digits}"\nc = 1979-05-27T07:32:00.{digits[:20]}\n'
        f"d = 1e{digits[:3]}\n# {digits}\n"
    )
    assert excess(text) is None
    assert tomllib.loads(text)["b"] == digits


def test_fast_path_declines_integers_it_cannot_hold() -> None:
    """The plain-layout reader hands integers beyond 64 bits to the bounded tomllib path."""
    assert parse_plain("x = 9223372036854775807\n") == {"x": 2**63 - 1}
    assert parse_plain("x = 9223372036854775808\n") is None
    assert parse_plain("x = " + "9" * 5000 + "\n") is None


@pytest.mark.parametrize("layout", ["dotted", "header", "array-header", "inline"])
def test_a_dotted_key_of_many_parts_is_refused_at_its_line(layout: str) -> None:
    """A key of 100,000 parts is refused (tomllib is quadratic in it), in every spelling."""
    key = ".".join(["a"] * 100_000)
    text = {
        "dotted": f"{key} = 1\n",
        "header": f"[{key}]\n",
        "array-header": f"[[{key}]]\n",
        "inline": f"x = {{ {key} = 1 }}\n",
    }[layout]
    line, _, message = only(invalid(HEADER + text))
    assert line == 2
    assert f"more than {MAX_KEY_PARTS} parts" in message


def test_a_dotted_key_within_the_bound_is_read() -> None:
    """A dotted key of MAX_KEY_PARTS parts is ordinary TOML, judged by the schema."""
    key = ".".join(f'"p{i}"' if i % 2 else f"p{i}" for i in range(MAX_KEY_PARTS))
    assert excess(f"{key} = 1\n") is None
    assert invalid(HEADER + f"{key} = 1\n").problems[0].message.startswith("unknown key 'p0'")


def test_a_huge_document_is_refused_before_it_is_decoded() -> None:
    """Bytes over 16 MiB are refused at line 1 by from_bytes itself."""
    data = b"# " + b"x" * MANIFEST_SIZE_LIMIT
    assert only(invalid(data))[:2] == (1, 1)
    assert "over 16 MiB" in only(invalid(data))[2]


def test_positions_of_a_broken_document_never_raise() -> None:
    """The position scanner falls back to (1, 1) on text it cannot follow."""
    positions = TomlPositions('a = "unterminated\n[t\nb = {')
    assert positions.find(("b",)) == (1, 1)
    assert positions.exact(("t",)) is None


def test_thousands_of_problems_are_listed_up_to_the_bound() -> None:
    """A file with 5,000 problems lists the first 1,000 and says how many more there are."""
    text = HEADER + "".join(f"k{i} = 1\n" for i in range(5000))
    problems = invalid(text).problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert [p.line for p in problems[:3]] == [2, 3, 4]
    assert problems[-1].message == "and 4000 more problems, not listed; fix these first"


def test_many_duplicate_modules_are_bounded_too() -> None:
    """Thousands of entries sharing one module list at most 1,000 problems."""
    entry = '[task-classes.s{i}]\nmodule = "bench.same.registration"\nroot = "bench"\n'
    text = HEADER + "".join(entry.format(i=i) for i in range(1500))
    problems = invalid(text).problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].message.startswith("and 499 more problems")


# -- control characters -----------------------------------------------------------------

CONTROLS = ["\x00", "\x01", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f", "\x85", "\x9b"]


@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_a_control_character_in_a_root_is_a_schema_error(char: str) -> None:
    """root = "x<control>y/bench" is refused at the root's line, the character escaped."""
    root = json.dumps(f"x{char}y/bench")  # a TOML basic string with \\uXXXX escapes
    error = invalid(HEADER + ENTRY.format(root=root))
    [problem] = error.problems
    assert (problem.line, problem.key) == (4, "task-classes.foo.root")
    assert f"contains a control character (U+{ord(char):04X})" in problem.message
    assert control_free(problem.message)
    assert all(control_free(line) for line in str(error).split("\n"))


def test_a_root_that_forges_a_list_line_is_refused() -> None:
    """A newline in a root cannot forge an entry in `list`: the manifest is invalid."""
    root = json.dumps("x\nfake-slug  bench.fake_slug.registration  bench/bench")
    assert only(invalid(HEADER + ENTRY.format(root=root)))[0] == 4


@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_control_characters_in_keys_are_escaped_in_problems(char: str) -> None:
    """A quoted key with a control character is rendered with TOML escapes, never raw."""
    key = json.dumps(f"a{char}b")
    error = invalid(HEADER + f"[task-classes.{key}]\n" + f"{key} = 1\n")
    for problem in error.problems:
        assert control_free(problem.key)
        assert control_free(problem.message)
    assert '"a' in error.problems[0].key


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x85"], ids=["NUL", "ESC", "NEL"])
def test_module_and_slug_refuse_control_characters(char: str) -> None:
    """Module names and slugs refuse control characters too (identifier and slug rules)."""
    module = json.dumps(f"bench.f{char}o.registration")
    text = HEADER + f'[task-classes.foo]\nmodule = {module}\nroot = "bench"\n'
    assert "not an ASCII Python identifier" in only(invalid(text))[2]
    slug = json.dumps(f"f{char}o")
    text = HEADER + f'[task-classes.{slug}]\nmodule = "bench.foo.registration"\nroot = "bench"\n'
    assert "non-slug character" in only(invalid(text))[2]


VALIDATOR = jsonschema.Draft202012Validator(json_schema())


@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_json_schema_refuses_control_characters_in_roots_too(char: str) -> None:
    """Editors (the JSON Schema) refuse a control character in a root, as the model does."""
    document = {
        "schema-version": 1,
        "task-classes": {"foo": {"module": "bench.foo.registration", "root": f"a{char}/bench"}},
    }
    assert not VALIDATOR.is_valid(document)
    document["task-classes"]["foo"]["root"] = "a b/é/bench"  # type: ignore[index]
    assert VALIDATOR.is_valid(document)


def test_schema_version_beyond_64_bits_from_python_is_reported_not_raised() -> None:
    """A huge schema-version built in Python gives a short schema error, not a ValueError."""
    with pytest.raises(ValueError, match="an integer beyond 64 bits"):
        BenchManifest.model_validate({"schema-version": 10**5000})


# -- any bytes, any TOML document ------------------------------------------------------


def check_from_bytes(data: bytes) -> None:
    """from_bytes returns or raises BenchManifestInvalid with located, printable problems."""
    try:
        BenchManifest.from_bytes(data, VIRTUAL)
    except BenchManifestInvalid as error:
        problems = error.problems
    else:
        return
    assert problems
    for problem in problems:
        assert problem.line >= 1
        assert problem.column >= 1
        assert control_free(problem.key)
        assert control_free(problem.message)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_give_a_manifest_or_a_located_error(data: bytes) -> None:
    """Any bytes: a manifest or BenchManifestInvalid with lines >= 1 (property)."""
    check_from_bytes(data)


TOML_CHUNKS = st.sampled_from(
    [
        "schema-version = 1\n",
        "[task-classes.foo]\n",
        'module = "bench.foo.registration"\n',
        'root = "bench"\n',
        "root = 'b\\x'\n",
        '"a\\u0000" = 1\n',
        "x = [\n",
        "]\n",
        "y = {",
        "}",
        "[[t]]\n",
        '"""\n',
        "'''",
        "# c\n",
        "a.b.c = 1\n",
        "z = 1979-05-27\n",
        "n = 1e999\n",
        "i = 99999999999999999999\n",
        "\r\n",
        "\\",
        "\x00",
        "é",
    ]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOML_CHUNKS, max_size=25).map("".join))
def test_toml_like_text_gives_a_manifest_or_a_located_error(text: str) -> None:
    """Text assembled from TOML fragments, broken or not: a manifest or a located error."""
    check_from_bytes(text.encode())


KEYS = st.one_of(
    st.sampled_from(["schema-version", "task-classes", "module", "root", "foo", "a-b"]),
    st.text(max_size=6),
)
SCALARS = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(["bench", "bench.foo.registration", "x\x00y/bench", "a/../bench"]),
    st.datetimes(),
    st.dates(),
    st.times(),
)
TOML_VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=40,
)


@st.composite
def toml_documents(draw: st.DrawFn) -> str:
    document: dict[str, Any] = draw(st.dictionaries(KEYS, TOML_VALUES, max_size=5))
    if draw(st.booleans()):
        document["schema-version"] = draw(st.sampled_from([1, 2, True, "1"]))
    if draw(st.booleans()):
        document["task-classes"] = draw(
            st.dictionaries(
                KEYS,
                st.fixed_dictionaries(
                    {},
                    optional={
                        "module": st.sampled_from(["bench.foo.registration", "os", "a.b.c"]),
                        "root": st.sampled_from(["bench", "x\x1b[31m/bench", "", "a\nb"]),
                        "extra": TOML_VALUES,
                    },
                )
                | TOML_VALUES,
                max_size=4,
            )
        )
    return tomli_w.dumps(document, multiline_strings=draw(st.booleans()))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(toml_documents())
def test_any_valid_toml_document_gives_a_manifest_or_a_located_error(text: str) -> None:
    """Any valid TOML document (generated, written by tomli_w): a manifest or a located error."""
    tomllib.loads(text)  # the generator writes valid TOML
    check_from_bytes(text.encode())


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(toml_documents(), st.integers(min_value=MAX_NESTING + 1, max_value=400))
def test_deep_values_anywhere_are_refused_with_a_line(text: str, depth: int) -> None:
    """A deeply nested value before any document is refused at its line (property)."""
    error = invalid("zz = " + "[" * depth + "]" * depth + "\n" + text)
    assert error.problems[0].line == 1
    assert "nested more than" in error.problems[0].message


# -- reading the file ----------------------------------------------------------------


def finishes(action: Callable[[], object], seconds: float = 10.0) -> object:
    """Run ``action`` in a thread; fail (instead of hanging) if it has not returned in time."""
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(action())
        except BaseException as error:  # handed to the test
            outcome.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the read hung"
    return outcome[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "bench.toml"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "bench.toml"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    yield path
    server.close()


def refusal(path: Path) -> str:
    """The message of the single problem reading ``path`` gives, without hanging."""
    outcome = finishes(lambda: read_manifest_bytes(path))
    assert isinstance(outcome, BenchManifestInvalid), outcome
    assert outcome.path == path
    line, column, message = only(outcome)
    assert (line, column) == (1, 1)
    return message


def test_a_fifo_is_refused_without_blocking(fifo: Path) -> None:
    """A FIFO named as the manifest is refused at once: no writer is waited for."""
    assert refusal(fifo) == "the file is a FIFO (named pipe), not a regular file"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_is_refused(device: str) -> None:
    """A character device (endless /dev/zero, empty /dev/null) is never read."""
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    assert refusal(Path(device)) == "the file is a character device, not a regular file"


def test_a_symbolic_link_to_a_device_is_refused(tmp_path: Path) -> None:
    """A bench.toml linking to /dev/zero is refused, as the device itself is."""
    link = tmp_path / "bench.toml"
    link.symlink_to("/dev/zero")
    assert "character device" in refusal(link)


def test_a_socket_is_refused(unix_socket: Path) -> None:
    """A Unix socket named as the manifest is refused, saying it is a socket."""
    assert refusal(unix_socket) == "the file is a socket, not a regular file"


def test_a_directory_is_refused_saying_so(tmp_path: Path) -> None:
    """A directory named as the manifest is refused, saying it is a directory."""
    (tmp_path / "bench.toml").mkdir()
    assert refusal(tmp_path / "bench.toml") == "the file is a directory, not a regular file"


def test_a_file_over_16_mib_is_refused_before_reading(tmp_path: Path) -> None:
    """A (sparse) file of 1 TiB is refused from its size, without reading a byte."""
    path = tmp_path / "bench.toml"
    with path.open("wb") as file:
        file.truncate(1 << 40)
    assert refusal(path) == f"the file is {1 << 40} bytes; files over 16 MiB are not read"


def test_a_file_of_exactly_16_mib_is_read(tmp_path: Path) -> None:
    """The bound is inclusive: 16 MiB is read (and then judged as TOML)."""
    path = tmp_path / "bench.toml"
    path.write_bytes(b"#" * MANIFEST_SIZE_LIMIT)
    assert len(read_manifest_bytes(str(path))) == MANIFEST_SIZE_LIMIT


def test_a_symbolic_link_to_a_manifest_is_followed(tmp_path: Path) -> None:
    """A bench.toml that links to a regular file is read through the link."""
    target = tmp_path / "real.toml"
    target.write_text(HEADER)
    (tmp_path / "bench.toml").symlink_to(target)
    assert BenchManifest.load(tmp_path / "bench.toml").slugs() == ()


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    """No file at all is still BenchManifestNotFound."""
    with pytest.raises(BenchManifestNotFound):
        read_manifest_bytes(tmp_path / "bench.toml")
    with pytest.raises(BenchManifestNotFound):
        read_manifest_bytes(tmp_path / "not-a-dir" / "bench.toml")


def test_every_library_entry_refuses_a_fifo(fifo: Path) -> None:
    """load, discover's reader and the loader's cache all refuse a FIFO without hanging."""
    for action in (
        lambda: BenchManifest.load(fifo),
        lambda: load_manifest_cached(str(fifo)),
    ):
        outcome = finishes(action)
        assert isinstance(outcome, BenchManifestInvalid), outcome
        assert "FIFO" in outcome.problems[0].message


def test_the_loader_cache_rereads_a_manifest_replaced_by_a_fifo(tmp_path: Path) -> None:
    """A cached manifest later replaced by a FIFO is refused, not served stale or hung on."""
    path = tmp_path / "bench.toml"
    path.write_text(HEADER)
    load_manifest_cached(str(path))
    path.unlink()
    os.mkfifo(path)
    outcome = finishes(lambda: load_manifest_cached(str(path)))
    assert isinstance(outcome, BenchManifestInvalid)


# -- the installed console script ------------------------------------------------------


def script() -> str:
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


def bench_cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the installed console script; a hang fails the test through the timeout."""
    return subprocess.run(
        [script(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("command", [["list"], ["list", "--no-cache"], ["show", "foo"]])
def test_cli_refuses_a_fifo_manifest_without_hanging(
    fifo: Path, tmp_path: Path, command: list[str]
) -> None:
    """`codegenie-bench --manifest FIFO list|show` exits 4 at once, naming what the file is."""
    result = bench_cli("--manifest", str(fifo), *command, cwd=tmp_path, timeout=30)
    assert result.returncode == 4, result.stderr
    assert "FIFO (named pipe)" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("command", [["list"], ["show", "foo"]])
def test_cli_refuses_a_device_manifest(tmp_path: Path, command: list[str]) -> None:
    """`--manifest /dev/zero` exits 4 with a located message, never MemoryError."""
    result = bench_cli("--manifest", "/dev/zero", *command, cwd=tmp_path, timeout=30)
    assert result.returncode == 4, result.stderr
    assert "character device" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_json_error_for_a_fifo_manifest(fifo: Path, tmp_path: Path) -> None:
    """Under --format json a FIFO manifest is the JSON error document on stdout."""
    result = bench_cli("--format", "json", "--manifest", str(fifo), "list", cwd=tmp_path)
    assert result.returncode == 4
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "BenchManifestInvalid"
    assert "FIFO" in json.dumps(error)


HOSTILE = {
    "deep": HEADER + "x = " + "[" * 3000 + "]" * 3000 + "\n",
    "deep-inline": HEADER + "x = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n",
    "bigint": HEADER + "x = " + "9" * 5000 + "\n",
    "bigint-array": HEADER + "x = [" + "9" * 5000 + "]\n",
    "nul-root": HEADER + ENTRY.format(root='"x\\u0000y/bench"'),
    "esc-root": HEADER + ENTRY.format(root='"\\u001b[31mx/bench"'),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("command", [["list"], ["show", "foo"], ["plan"]])
def test_cli_reports_hostile_manifests_with_exit_4(
    tmp_path: Path, kind: str, command: list[str]
) -> None:
    """3,000-deep nesting, 5,000-digit integers, control characters in roots: exit 4, a line."""
    bench = make_bench(tmp_path, "foo")
    bench.manifest.write_text(HOSTILE[kind])
    result = bench_cli(*command, cwd=tmp_path)
    assert result.returncode == 4, result.stderr
    assert "bench.toml:" in result.stderr
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr
    assert "\x00" not in result.stdout + result.stderr
    assert "\x1b" not in result.stdout + result.stderr


@pytest.mark.parametrize("kind", ["deep", "bigint"])
def test_check_reports_hostile_manifests_as_diagnostics(tmp_path: Path, kind: str) -> None:
    """`check` turns a 3,000-deep or 5,000-digit manifest into a manifest-syntax diagnostic, exit 4."""
    bench = make_bench(tmp_path, "foo")
    bench.manifest.write_text(HOSTILE[kind])
    result = bench_cli("check", "--format", "json", cwd=tmp_path)
    assert result.returncode == 4, result.stderr
    [diagnostic] = json.loads(result.stdout)["diagnostics"]
    assert diagnostic["code"] == "manifest-syntax"
    assert diagnostic["line"] == 2


def test_a_bare_key_of_digits_is_not_taken_for_an_integer() -> None:
    """A key written as 20 digits is a key (an unknown one), not an out-of-range integer."""
    digits = "1" * 20
    assert excess(f"{digits} = 1\n{digits}.x = 2\n") is None
    assert invalid(HEADER + f"{digits} = 1\n").problems[0].message.startswith("unknown key")


def test_sparse_problems_after_many_valid_entries_stay_bounded() -> None:
    """Thousands of valid entries, then thousands of unknown keys: 1,000 listed, the rest counted."""
    entry = '[task-classes.s{i}]\nmodule = "bench.s{i}.registration"\nroot = "bench"\n'
    text = HEADER + "".join(f"k{i} = 1\n" for i in range(6000))
    text += "".join(entry.format(i=i) for i in range(5000))
    problems = invalid(text).problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[0].line == 2
    assert problems[-1].message.startswith("and 5000 more problems")


# -- the commands, in-process, on any bytes ---------------------------------------------

DOCUMENTS = st.one_of(
    st.binary(max_size=300),
    st.lists(TOML_CHUNKS, max_size=20).map(lambda chunks: "".join(chunks).encode()),
    toml_documents().map(str.encode),
)


@pytest.mark.parametrize(
    ("command", "exits"),
    [(["list"], {0, 4}), (["show", "foo"], {3, 4}), (["check", "--format", "json"], {0, 1, 4})],
    ids=["list", "show", "check"],
)
def test_commands_answer_any_manifest_with_a_typed_result(
    tmp_path_factory: pytest.TempPathFactory, command: list[str], exits: set[int]
) -> None:
    """list, show and check on any manifest bytes: a result or a typed error, never `internal error`."""
    from codegenie.eval.cli import main

    manifest = tmp_path_factory.mktemp("any") / "bench.toml"

    @settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
    @given(DOCUMENTS)
    def run(data: bytes) -> None:
        manifest.write_bytes(data)
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["--manifest", str(manifest), *command])
        assert code in exits, stderr.getvalue()
        assert "internal error" not in stderr.getvalue()
        assert "Traceback" not in stderr.getvalue()

    run()


def test_the_loader_manifest_cache_is_bounded(tmp_path: Path) -> None:
    """A long-lived process reading 200 distinct manifests remembers at most 64 of them."""
    from codegenie.eval._cache import memo as manifest_module

    for n in range(200):
        path = tmp_path / f"m{n}" / "bench.toml"
        path.parent.mkdir()
        path.write_text(HEADER)
        load_manifest_cached(str(path))
    assert len(manifest_module._cache) == 64
    assert str(tmp_path / "m199" / "bench.toml") in manifest_module._cache


def test_interleaved_nesting_is_refused_too() -> None:
    """Nesting that never opens 33 brackets in a row ("[[]" repeated) is still bounded."""
    value = "[[]," * 40 + "1" + "]" * 40
    line, column, message = only(invalid(HEADER + "x = " + value + "\n"))
    assert line == 2
    assert f"nested more than {MAX_NESTING} deep" in message
    assert column == 5 + 4 * (MAX_NESTING - 1) + 1  # the second "[" of the 32nd "[[],"
