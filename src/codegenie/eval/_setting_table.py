"""The settings of ``check`` and ``grade``, each declared once, in one table.

Each :class:`SettingSpec` is a key of the ``[tool.codegenie-bench]`` table,
the command-line option that overrides it, its default, what ``--show-settings``
says of an unset value and which commands use it. The file's reader, the
defaults, ``--show-settings`` and each command's list of the settings it
uses are derived from :data:`SETTINGS`; the command-line options and the
settings table of the command-line reference are checked against it by
the tests. Cheap to import: the command line reads it when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, final

__all__ = ("SETTINGS", "SettingSpec", "defaults", "settings_of")


@final
@dataclass(frozen=True, slots=True)
class SettingSpec:
    """One setting: ``name`` (the key), ``flag`` (the option), ``default`` and who uses it.

    ``kind`` says what a value must be, ``shown_default`` what the default
    is, in words (the reference's table); ``unset`` what ``--show-settings``
    prints for a value that is unset (``None``: it means the default's
    words); ``commands`` are the commands that put it in force, and
    ``used_by`` says so in words (``check (--rubrics)``).
    """

    name: str
    kind: str
    flag: str
    default: object
    shown_default: str
    commands: tuple[str, ...]
    used_by: str
    unset: str = ""


#: Every setting, in the order ``--show-settings`` lists them.
SETTINGS: Final[tuple[SettingSpec, ...]] = (
    SettingSpec(
        "select",
        "array of check codes",
        "--select",
        None,
        "every code",
        ("check",),
        "`check`",
        unset="(every code)",
    ),
    SettingSpec("ignore", "array of check codes", "--ignore", (), "none", ("check",), "`check`"),
    SettingSpec("strict", "boolean", "--strict", False, "`false`", ("check",), "`check`"),
    SettingSpec(
        "jobs",
        "integer ≥ 1",
        "--jobs",
        None,
        "the number of CPUs",
        ("check", "grade"),
        "`check`, `grade`",
        unset="(the number of CPUs)",
    ),
    # check.DEFAULT_TIMEOUT, which a test holds it equal to
    SettingSpec(
        "timeout", "number > 0 (seconds)", "--timeout", 60.0, "`60`", ("check",), "`check`"
    ),
    SettingSpec("repeat", "integer ≥ 1", "--repeat", 1, "`1`", ("check",), "`check` (`--rubrics`)"),
    SettingSpec(
        "sandbox",
        '`"auto"`, `"bwrap"` or `"none"`',
        "--sandbox",
        "auto",
        '`"auto"`',
        ("check", "grade"),
        "`check`, `grade`",
    ),
    SettingSpec(
        "executor",
        '`"local"` or `"ray"`',
        "--executor",
        "local",
        '`"local"`',
        ("check", "grade"),
        "`check` (`--rubrics`), `grade`",
    ),
    SettingSpec(
        "format",
        '`"text"`, `"json"`, `"github"`, `"junit"`, `"sarif"` or `"html"`',
        "--format",
        "text",
        '`"text"`',
        ("check", "grade"),
        '`check`, `grade` (not `"sarif"`)',
    ),
)


def defaults() -> dict[str, object]:
    """Return each setting's default, by name, in the table's order."""
    return {spec.name: spec.default for spec in SETTINGS}


def settings_of(command: str) -> tuple[str, ...]:
    """Return the names of the settings ``command`` puts in force, in the table's order."""
    return tuple(spec.name for spec in SETTINGS if command in spec.commands)
