"""docs/architecture.md stays true of the code: its code map and its drawing of the layers."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "src" / "codegenie" / "eval"
ARCHITECTURE = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")

_NAME = re.compile(r"`([^`]+)`")


def _section(title: str) -> str:
    """The text of the ``## title`` section of docs/architecture.md, up to the next one."""
    return ARCHITECTURE.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _top_level() -> set[str]:
    """Every module and package directly under ``codegenie.eval`` (the package's own ``__init__`` aside)."""
    modules = {path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    return modules | {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}


def _code_map() -> list[tuple[str, tuple[str, ...]]]:
    """Each module the code map gives an entry to, with the packages of the heading it is under.

    An entry is a heading's names (those before its colon, else those after
    it) or a bullet's leading names (those before its dash, else its first).
    """
    entries: list[tuple[str, tuple[str, ...]]] = []
    heading: tuple[str, ...] = ()
    for line in _section("Code map").splitlines():
        if line.startswith("### "):
            before, _, after = line[4:].partition(":")
            names = _NAME.findall(before) or _NAME.findall(after)
            heading = tuple(name.rstrip("/") for name in names)
        elif line.startswith("- `"):
            lead, dash, _ = line.partition(" — ")
            names = _NAME.findall(lead) if dash else _NAME.findall(line)[:1]
        else:
            continue
        entries += [(name.rstrip("/"), heading) for name in names]
    return entries


def _exists(name: str, heading: tuple[str, ...]) -> bool:
    """Whether ``name`` is a path under the package, a top-level module, or one of the heading's."""
    if "/" in name:
        return (PACKAGE / name).exists()
    if name in _top_level():
        return True
    return any(
        (PACKAGE / package / f"{name}.py").is_file()
        or (PACKAGE / package / name / "__init__.py").is_file()
        for package in heading
    )


def test_the_code_map_names_every_module_and_package() -> None:
    """Every module and package directly under `codegenie.eval` has an entry in the code map."""
    named = {name.split("/")[0] for name, _ in _code_map()}
    assert sorted(_top_level() - named) == []


def test_every_module_the_code_map_names_exists() -> None:
    """No entry of the code map names a module or package that is not there."""
    entries = _code_map()
    assert len(entries) > 50  # the code map was read
    assert [name for name, heading in entries if not _exists(name, heading)] == []


def _drawn_layers() -> list[set[str]]:
    """The layers drawn in the Layers section, top to bottom, each the set of its names."""
    drawing = _section("Layers").split("```\n", 2)[1]
    layers: list[set[str]] = []
    for line in drawing.splitlines():
        if line.startswith(" " * 8):
            continue  # a description's second line
        names = re.split(r"\s{2,}", line.strip())[0]
        found = {name.strip().rstrip("/") for name in names.split("|") if name.strip()}
        if line.startswith("  |"):
            layers[-1] |= found
        else:
            layers.append(found)
    return layers


def test_the_drawn_layers_are_the_contract() -> None:
    """The drawing of the layers in docs/architecture.md is the `layers` contract of pyproject.toml."""
    settings = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [
        contract
        for contract in settings["tool"]["importlinter"]["contracts"]
        if contract["id"] == "layers"
    ]
    declared = [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]
    assert _drawn_layers() == declared
