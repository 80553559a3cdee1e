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


def render(slugs: list[str], style: str, comments: bool, root_first: bool) -> str:
    """A valid manifest declaring ``slugs``, written in ``style``."""
    lines = ["#:schema ./docs/bench.schema.json", "", "schema-version = 1", ""]
    if style == "table-first":
        lines.append("[task-classes]")
    for slug in slugs:
        module = f'"bench.{slug.replace("-", "_")}.registration"'
        keys = [f"module = {module}", 'root = "bench"']
        if root_first:
            keys.reverse()
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


@given(SLUGS, st.sampled_from(STYLES), st.booleans(), st.booleans())
def test_entry_positions_are_where_toml_positions_finds_each_key(
    slugs: list[str], style: str, comments: bool, root_first: bool
) -> None:
    """For a valid manifest in any layout, every position equals TomlPositions.find's (property)."""
    text = render(slugs, style, comments, root_first)
    manifest = BenchManifest.from_bytes(text.encode(), Path("/virtual/bench.toml"))
    assert manifest.slugs() == tuple(slugs)
    version_at, table_at, records = entry_positions(text, slugs)
    positions = TomlPositions(text)
    assert version_at == positions.find(("schema-version",))
    assert table_at == positions.find(("task-classes",))
    for slug, record in zip(slugs, records, strict=True):
        assert record[0:2] == positions.find(("task-classes", slug))
        assert record[2:4] == positions.find(("task-classes", slug, "module"))
        assert record[4:6] == positions.find(("task-classes", slug, "root"))


def test_the_plain_layout_takes_the_one_pass_reader() -> None:
    """The layout `new` writes (CRLF, comments, a [task-classes] table first) is read in one pass."""
    for style in ("plain", "crlf", "table-first"):
        text = render(["aa", "bb-cc"], style, comments=True, root_first=False)
        assert _plain_entry_positions(text, ["aa", "bb-cc"]) is not None, style


def test_other_layouts_are_left_to_the_full_scanner() -> None:
    """Indented, quoted, spaced, inline and dotted layouts are not the plain reader's to answer."""
    for style in ("indented", "quoted", "spaced", "inline", "dotted"):
        text = render(["aa", "bb-cc"], style, comments=False, root_first=False)
        assert _plain_entry_positions(text, ["aa", "bb-cc"]) is None, style
