"""The plain-layout reader agrees with tomllib on everything it accepts."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegenie.eval._toml.fast import parse_plain

REPO = Path(__file__).resolve().parent.parent
TOML_TEST = Path(__file__).resolve().parent / "data" / "toml-test" / "invalid"


def tomllib_or_none(text: str) -> object:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


@pytest.mark.shipped_bench
def test_shipped_manifest_is_plain() -> None:
    """The shipped bench.toml takes the fast path and reads as tomllib reads it."""
    text = (REPO / "bench.toml").read_text(encoding="utf-8")
    assert parse_plain(text) is not None
    assert parse_plain(text) == tomllib.loads(text)


@pytest.mark.parametrize("path", sorted(TOML_TEST.rglob("*.toml")), ids=lambda p: p.name)
def test_never_accepts_an_invalid_document(path: Path) -> None:
    """No document of the toml-test invalid set passes the fast path."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return
    assert parse_plain(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "a = 1\n",
        'a = "x"  # comment\n',
        "[t]\na = 1\n[t.u]\nb = 2\n",
        "[t.u]\n[t]\na = 1\n",
        "[ t . u ]\nk = 0\n",
        'a = "tab\there"\r\nb = "ünï"\r\n',
        "# only a comment",
        'tags = ["a", "b"]\nflag = true\noff = false\n',
        'tags = [ "a" , ]  # a trailing comma\nnone = []\n',
    ],
)
def test_plain_documents_read_like_tomllib(text: str) -> None:
    """Documents in the plain layout are accepted, with tomllib's result."""
    assert parse_plain(text) == tomllib.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        "a = 1\na = 2\n",  # repeated key
        "[t]\n[t]\n",  # repeated table
        "[t]\nu = 1\n[t.u]\n",  # table over a value
        "[t.u]\n[t]\nu = 1\n",  # value over a table
        "a = 01\n",  # leading zero
        'a = "\\n"\n',  # an escape: tomllib's job
        "a = 'x'\n",  # literal string: tomllib's job
        "a = 1\rb = 2\n",  # bare carriage return
        "a.b = 1\n",  # dotted key: tomllib's job
        "a = 1.5\n",  # a float: tomllib's job
        "a = [1]\n",  # an array of anything but plain strings: tomllib's job
        'a = [["x"]]\n',
        'a = [\n"x"]\n',  # a multi-line array
        'a = ["x" "y"]\n',  # invalid
        "a = [,]\n",
        'a = ["x",,]\n',
        "a = truex\n",
    ],
)
def test_anything_else_goes_to_tomllib(text: str) -> None:
    """Outside the plain layout (or invalid), the fast path declines."""
    assert parse_plain(text) is None


KEYS = st.sampled_from(
    ["a", "b", "module", "root", "schema-version", "task-classes", "x_1", "a b", '"q"']
)
VALUES = st.one_of(
    st.integers(min_value=-5, max_value=10**20).map(str),
    st.sampled_from(["01", "1_0", "+1", "true", "1.5", "[]", "{}", "'lit'", '""']),
    st.lists(st.sampled_from(['"a"', '""', '"\\n"', "1", "[]", "", " ", "\t"]), max_size=4).map(
        lambda items: "[" + ",".join(items) + "]"
    ),
    st.sampled_from(["false", "True", "true # c", "[ ]", '[ "a" , ]', '["a",]]']),
    st.text(
        alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs", "Cc"]),
        max_size=8,
    ).map(lambda s: '"' + s + '"'),
)
HEADERS = st.lists(
    st.sampled_from(["t", "u", "task-classes", "a", "x y", "v-1"]), min_size=1, max_size=3
)
LINES = st.one_of(
    st.tuples(KEYS, st.sampled_from([" = ", "=", " =\t"]), VALUES).map("".join),
    HEADERS.map(lambda parts: "[" + ".".join(parts) + "]"),
    HEADERS.map(lambda parts: "[[" + ".".join(parts) + "]]"),
    st.text(max_size=6).map(lambda s: "# " + s),
    st.sampled_from(["", "  ", "\t", "[", "= 1", "a = 1 # c", "a = 1 x"]),
)


@settings(max_examples=400)
@given(st.lists(LINES, max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_fast_path_agrees_with_tomllib(lines: list[str], newline: str) -> None:
    """Whatever the fast path accepts, tomllib reads to the same dict (property)."""
    text = newline.join(lines)
    fast = parse_plain(text)
    if fast is not None:
        assert fast == tomllib_or_none(text)


SAFE_STRING = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_characters='"\\\x7f', exclude_categories=["Cc", "Cs"]
    ),
    max_size=10,
)


@st.composite
def plain_documents(draw: st.DrawFn) -> str:
    lines = ["schema-version = 1"]
    for table in draw(
        st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}\Z", fullmatch=True), unique=True, max_size=5)
    ):
        lines.append(f"[task-classes.{table}]")
        for key in draw(st.lists(st.sampled_from(["module", "root", "x"]), unique=True)):
            value = draw(
                st.one_of(st.integers(0, 10**6).map(str), SAFE_STRING.map(lambda s: f'"{s}"'))
            )
            lines.append(f"{key} = {value}  # note")
        lines.append("")
    return "\n".join(lines)


@given(plain_documents())
def test_plain_layout_always_takes_the_fast_path(text: str) -> None:
    """Every document in the plain layout is read by the fast path, as tomllib reads it."""
    fast = parse_plain(text)
    assert fast is not None
    assert fast == tomllib.loads(text)
