"""Each command's options for its settings, made from the settings table.

A setting's option (its flag, how its value is read, its metavar, its
``--help`` words for each command) is declared once, in
:data:`codegenie.eval._setting_table.SETTINGS`; :func:`add_setting_options`
adds a command's to its parser, in the place the command's ``--help`` lists
them, and :func:`add_setting_option` adds one (``--format``, a global option
every command takes). A setting's default on the command line is ``None``:
not given, so the ``[tool.codegenie-bench]`` table's value, else the default.
Cheap to import: every command's parser is built with it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, Final

from codegenie.eval._reports.formats import NAMES, format_help, format_metavar
from codegenie.eval._sandbox.choices import CHOICES
from codegenie.eval._setting_table import setting, settings_of
from codegenie.eval.cli._base import add_executor_options, positive_int

__all__ = ("Layout", "add_setting_option", "add_setting_options")

#: A command's options in the order its ``--help`` lists them: a setting's name, or
#: what adds options that are not settings.
Layout = Sequence[str | Callable[[argparse.ArgumentParser], None]]


def add_setting_options(parser: argparse.ArgumentParser, command: str, layout: Layout) -> None:
    """Add ``command``'s options in ``layout``'s order, each setting's made from the table.

    ``layout`` must name each setting ``command`` uses (:func:`settings_of`)
    that is not a global option, once, and no other: ``ValueError``
    otherwise (a command whose parser lacks a setting's option is a bug
    found when the parser is built, by every test that builds it).
    """
    named = [item for item in layout if isinstance(item, str)]
    wanted = [name for name in settings_of(command) if not setting(name).global_option]
    if sorted(named) != sorted(wanted):
        msg = f"{command}'s options name the settings {named}, the table gives it {wanted}"
        raise ValueError(msg)
    for item in layout:
        if isinstance(item, str):
            add_setting_option(parser, item, command)
        else:
            item(parser)


def add_setting_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    name: str,
    command: str | None,
    *,
    default: object = None,
) -> None:
    """Add setting ``name``'s option as ``command``'s ``--help`` shows it (``None``: the top level).

    ``default`` is the value of an option not given (``None``: so the
    settings are read; a subcommand's copy of a global option passes
    ``argparse.SUPPRESS``, leaving the top level's value alone).
    """
    spec = setting(name)
    words = spec.help if command is None else spec.help_of(command)
    if spec.reader == "executor":
        if not isinstance(parser, argparse.ArgumentParser):
            msg = "the executors' options are a command's, not a group's"
            raise TypeError(msg)
        add_executor_options(parser, words)
        return
    options: dict[str, Any] = {"default": default}
    if spec.reader == "flag":
        options["action"] = "store_true"
    elif spec.reader == "sandbox":
        options["choices"] = CHOICES
    elif spec.reader == "format":
        options["choices"] = NAMES
        options["metavar"] = None if command is None else format_metavar(command)
        words = format_help(command)
    else:
        options["type"] = _READERS[spec.reader]
    if spec.metavar is not None:
        options["metavar"] = spec.metavar
    parser.add_argument(spec.flag, help=words, **options)


def _codes(text: str) -> list[str]:
    """Return ``text`` as check codes (an argparse ``type``: ``--select``, ``--ignore``)."""
    from codegenie.eval._settings import parse_codes  # noqa: PLC0415 - start-up: only a command given codes pays for it

    try:
        return parse_codes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _selectors(text: str) -> list[str]:
    """Return ``text`` as exploit selectors (an argparse ``type``: ``--exploits``)."""
    from codegenie.eval.check.exploit_choice import parse_selectors  # noqa: PLC0415 - start-up: only a command given exploits pays for the catalogue

    try:
        return parse_selectors(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_float(text: str) -> float:
    """Return ``text`` as a number of seconds above 0 (an argparse ``type``: ``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        msg = f"expected a number of seconds above 0 (or inf), not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


#: The argparse ``type`` of each reader that takes a value and has no words of its own.
_READERS: Final[dict[str, Callable[[str], object]]] = {
    "positive_int": positive_int,
    "seconds": _positive_float,
    "codes": _codes,
    "exploits": _selectors,
}
