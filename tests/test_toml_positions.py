"""codegenie.eval._toml.positions.entry_positions: the cache's positions are TomlPositions' own."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from codegenie.eval import BenchManifest
from codegenie.eval._toml.positions import TomlPositions, _plain_entry_positions, entry_positions
from codegenie.eval.naming import RESERVED_SLUGS

SLUGS = st.lists(
    st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]\Z", fullmatch=True).filter(
        lambda s: s not in RESERVED_SLUGS
    ),
    unique=True,
    min_size=1,
    max_size=6,
)
STYLES = ["plain", "spaced", "indented", "quoted", "inline", "dotted", "table-first", "crlf"]


#: Optional keys an entry may set (each on one line), as written.
OPTIONAL = [
    'environment = "envs/a b.txt"',
    'python = "3.12"',
    'accept = ["cases-missing", "module-convention"]',
    "accept = []",
]


def render(
    slugs: list[str], style: str, comments: bool, root_first: bool, optional: tuple[str, ...] = ()
) -> str:
    """A valid manifest declaring ``slugs``, written in ``style``, each setting ``optional``."""
    lines = ["#:schema ./docs/bench.schema.json", "", "schema-version = 1", ""]
    if style == "table-first":
        lines.append("[task-classes]")
    for slug in slugs:
        module = f'"bench.{slug.replace("-", "_")}.registration"'
        keys = [f"module = {module}", 'root = "bench"']
        if root_first:
            keys.reverse()
        keys[1:1] = optional
        if style == "inline":
            lines.append(f"task-classes.{slug} = {{ {', '.join(keys)} }}")
            continue
        if style == "dotted":
            lines += [f"task-classes.{slug}.{key}" for key in keys]
            continue
        header = {
            "quoted": f'[task-classes."{slug}"]',
            "spaced": f"[ task-classes . {slug} ]",
        }.get(style, f"[task-classes.{slug}]")
        lines.append(header + ("  # entry" if comments else ""))
        if comments:
            lines.append('# module = "not.this.one"')
        indent = "    " if style == "indented" else ""
        lines += [indent + key for key in keys]
        lines.append("")
    text = "\n".join(lines) + "\n"
    return text.replace("\n", "\r\n") if style == "crlf" else text


OPTIONAL_SETS = st.lists(st.sampled_from(OPTIONAL), max_size=3, unique_by=lambda line: line[:6])


@given(SLUGS, st.sampled_from(STYLES), st.booleans(), st.booleans(), OPTIONAL_SETS)
def test_entry_positions_are_where_toml_positions_finds_each_key(
    slugs: list[str], style: str, comments: bool, root_first: bool, optional: list[str]
) -> None:
    """For a valid manifest in any layout, every position equals TomlPositions.find's (property).

    The optional keys an entry sets (environment, python, accept) are found
    too, and only those it sets.
    """
    text = render(slugs, style, comments, root_first, tuple(optional))
    manifest = BenchManifest.from_bytes(text.encode(), Path("/virtual/bench.toml"))
    assert manifest.slugs() == tuple(slugs)
    version_at, table_at, records, written = entry_positions(text, slugs)
    positions = TomlPositions(text)
    assert version_at == positions.find(("schema-version",))
    assert table_at == positions.find(("task-classes",))
    for slug, record, keys in zip(slugs, records, written, strict=True):
        assert record[0:2] == positions.find(("task-classes", slug))
        assert record[2:4] == positions.find(("task-classes", slug, "module"))
        assert record[4:6] == positions.find(("task-classes", slug, "root"))
        assert set(keys) == {line.partition(" ")[0] for line in optional}
        for key, at in keys.items():
            assert at == positions.find(("task-classes", slug, key))


def test_the_plain_layout_takes_the_one_pass_reader() -> None:
    """The layout `new` writes (CRLF, comments, a [task-classes] table first) is read in one pass."""
    for style in ("plain", "crlf", "table-first"):
        text = render(["aa", "bb-cc"], style, comments=True, root_first=False)
        assert _plain_entry_positions(text, ["aa", "bb-cc"]) is not None, style
        text = render(
            ["aa", "bb-cc"], style, comments=True, root_first=False, optional=tuple(OPTIONAL[:3])
        )
        assert _plain_entry_positions(text, ["aa", "bb-cc"]) is not None, style


def test_other_layouts_are_left_to_the_full_scanner() -> None:
    """Indented, quoted, spaced, inline and dotted layouts are not the plain reader's to answer."""
    for style in ("indented", "quoted", "spaced", "inline", "dotted"):
        text = render(["aa", "bb-cc"], style, comments=False, root_first=False)
        assert _plain_entry_positions(text, ["aa", "bb-cc"]) is None, style
