"""The settings of ``check`` and ``grade``, each declared once, in one table.

Each :class:`SettingSpec` is a key of the ``[tool.codegenie-bench]`` table,
the command-line option that overrides it (how argparse reads it, its
metavar and its ``--help`` words, per command where they differ), its
default, what ``--show-settings`` says of an unset value and which commands
use it. The file's reader, the defaults, ``--show-settings``, each command's
list of the settings it uses and each command's options for them are
derived from :data:`SETTINGS`; the settings table of the command-line
reference is checked against it by the tests. Cheap to import: the command
line reads it when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, final

__all__ = ("SETTINGS", "Reader", "SettingSpec", "defaults", "setting", "settings_of")

#: How the command line reads a setting's value (the command line maps each to argparse):
#: ``positive_int`` a whole number ≥ 1, ``seconds`` a number > 0, ``codes`` comma-separated check
#: codes, ``exploits`` comma-separated exploit selectors, ``flag`` no value (present: true), and
#: three whose words come from a registry: ``sandbox`` (the sandbox providers), ``executor`` (the
#: registered executors, each adding its own options after it) and ``format`` (the formats the
#: command writes: a global option, which every command takes).
Reader = Literal[
    "positive_int", "seconds", "codes", "exploits", "flag", "sandbox", "executor", "format"
]


@final
@dataclass(frozen=True, slots=True)
class SettingSpec:
    """One setting: ``name`` (the key), ``flag`` (the option), ``default`` and who uses it.

    ``kind`` says what a value must be, ``shown_default`` what the default
    is, in words (the reference's table); ``unset`` what ``--show-settings``
    prints for a value that is unset (``""``: it means the default's
    words); ``commands`` are the commands that put it in force, and
    ``used_by`` says so in words (``check (--rubrics)``). ``reader`` is how
    the command line reads the option's value, ``metavar`` how ``--help``
    shows it (``None``: argparse's own, the choices of a ``reader`` with
    words), ``help`` what ``--help`` says of it and ``help_for`` the words
    of the commands that say it otherwise (``(command, words)`` pairs); the
    ``executor`` reader's words end with ``{executors}`` (the registered
    executors, described), and the ``format`` reader's are the formats
    registry's.
    """

    name: str
    kind: str
    flag: str
    default: object
    shown_default: str
    commands: tuple[str, ...]
    used_by: str
    reader: Reader
    unset: str = ""
    metavar: str | None = None
    help: str = ""
    help_for: tuple[tuple[str, str], ...] = ()

    @property
    def attribute(self) -> str:
        """The setting's name as a Python name (``ignore-exploits``: ``ignore_exploits``)."""
        return self.name.replace("-", "_")

    @property
    def global_option(self) -> bool:
        """Whether the option is a global one, which every command takes (``--format``)."""
        return self.reader == "format"

    def help_of(self, command: str) -> str:
        """Return what ``command``'s ``--help`` says of the option."""
        return dict(self.help_for).get(command, self.help)


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
        "codes",
        unset="(every code)",
        metavar="CODES",
        help="report only these check codes, comma-separated (default: every code)",
    ),
    SettingSpec(
        "ignore",
        "array of check codes",
        "--ignore",
        (),
        "none",
        ("check",),
        "`check`",
        "codes",
        metavar="CODES",
        help="never report these check codes, comma-separated",
    ),
    SettingSpec(
        "strict",
        "boolean",
        "--strict",
        False,
        "`false`",
        ("check",),
        "`check`",
        "flag",
        help="fail on warnings too, not only on errors",
    ),
    SettingSpec(
        "jobs",
        "integer ≥ 1",
        "--jobs",
        None,
        "the number of CPUs",
        ("check", "grade"),
        "`check`, `grade`",
        "positive_int",
        unset="(the number of CPUs)",
        metavar="N",
        help_for=(
            ("check", "worker processes importing registrations (default: the number of CPUs)"),
            ("grade", "rubrics run at once (default: the number of CPUs)"),
        ),
    ),
    # check.DEFAULT_TIMEOUT, which a test holds it equal to
    SettingSpec(
        "timeout",
        "number > 0 (seconds)",
        "--timeout",
        60.0,
        "`60`",
        ("check",),
        "`check`",
        "seconds",
        metavar="SECONDS",
        help="how long one registration may take to import (default: 60)",
    ),
    SettingSpec(
        "repeat",
        "integer ≥ 1",
        "--repeat",
        1,
        "`1`",
        ("check",),
        "`check` (`--rubrics`)",
        "positive_int",
        metavar="N",
        help="with --rubrics: run each case's rubric N times on expected/ and on input/; "
        "runs that disagree make the case case-flaky (default: 1)",
    ),
    SettingSpec(
        "exploits",
        "array of exploit selectors",
        "--exploits",
        None,
        "every exploit",
        ("check",),
        "`check` (`--rubrics`)",
        "exploits",
        unset="(every exploit)",
        metavar="SELECTORS",
        help="with --rubrics: run only these exploits of the cheat run, comma-separated "
        "[SLUG:]NAME, FAMILY, own or * (default: every exploit; `codegenie-bench exploits` "
        "lists them)",
    ),
    SettingSpec(
        "ignore-exploits",
        "array of exploit selectors",
        "--ignore-exploits",
        (),
        "none",
        ("check",),
        "`check` (`--rubrics`)",
        "exploits",
        metavar="SELECTORS",
        help="with --rubrics: never run these exploits, comma-separated [SLUG:]NAME, FAMILY, "
        "own or * (every ignore is shown in --show-settings and the report)",
    ),
    SettingSpec(
        "sandbox",
        '`"auto"`, `"bwrap"` or `"none"`',
        "--sandbox",
        "auto",
        '`"auto"`',
        ("check", "grade"),
        "`check`, `grade`",
        "sandbox",
        help="where rubrics run: auto (bubblewrap; the command stops if it cannot start), "
        "bwrap, or none (not contained: the rubric and the code it runs get your rights, "
        "files and network)",
    ),
    SettingSpec(
        "executor",
        '`"local"` or `"ray"`',
        "--executor",
        "local",
        '`"local"`',
        ("check", "grade"),
        "`check` (`--rubrics`), `grade`",
        "executor",
        help="what makes the rubric runs: {executors}",
    ),
    SettingSpec(
        "format",
        '`"text"`, `"json"`, `"github"`, `"junit"`, `"sarif"` or `"html"`',
        "--format",
        "text",
        '`"text"`',
        ("check", "grade"),
        '`check`, `grade` (not `"sarif"`)',
        "format",
    ),
)


def defaults() -> dict[str, object]:
    """Return each setting's default, by name (as the file writes it), in the table's order."""
    return {spec.name: spec.default for spec in SETTINGS}


def settings_of(command: str) -> tuple[str, ...]:
    """Return the names of the settings ``command`` puts in force, in the table's order."""
    return tuple(spec.name for spec in SETTINGS if command in spec.commands)


def setting(name: str) -> SettingSpec:
    """Return the setting ``name`` (``KeyError``: no such setting)."""
    for spec in SETTINGS:
        if spec.name == name:
            return spec
    raise KeyError(name)
