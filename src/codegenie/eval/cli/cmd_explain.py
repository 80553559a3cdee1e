"""``codegenie-bench explain CODE``: what a check code means, an example, and the fix.

The text comes from the installed package (:mod:`codegenie.eval._code_docs`),
so it is there in any repository that installed codegenie-eval: hints that
need more than a line point here, never at a document the user lacks.
"""

from __future__ import annotations

import argparse
import difflib

from codegenie.eval.cli._base import Command, Output

__all__ = ("COMMAND",)


def _code(text: str) -> str:
    """Return ``text`` when it is a check code (an argparse ``type``); else say what it may be."""
    from codegenie.eval.codes import CODES  # noqa: PLC0415 - start-up: only this command pays for it

    if text in CODES:
        return text
    close = difflib.get_close_matches(text.lower(), CODES, n=1, cutoff=0.6)
    message = f"unknown check code {text!r}"
    if close:
        message += f"; did you mean {', '.join(repr(code) for code in close)}?"
    elif _is_error_code(text):
        message += (
            " (it names an error of a command, not a check: its message and hint say what to do)"
        )
    else:
        message += "; `codegenie-bench explain --all` explains every code"
    raise argparse.ArgumentTypeError(message)


def _is_error_code(text: str) -> bool:
    """Whether ``text`` is the code of an error a command reports (``task-class-not-found``)."""
    from codegenie.eval import errors  # noqa: PLC0415 - start-up: only for a code that is not a check's

    codes = {"usage-error", "internal-error"}
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, errors.EvalError):
            codes.add(value.code)
    return text in codes


def run(args: argparse.Namespace, out: Output) -> int:
    """Print the reference of ``CODE`` (or, with ``--all``, of every code): Markdown, or JSON."""
    from codegenie.eval._code_docs import DOCS, markdown, reference  # noqa: PLC0415 - start-up: only this command pays for it

    if args.all:
        document = {"codes": [doc.to_json() for doc in DOCS.values()]}
        out.result(document, reference())
    else:
        out.result(DOCS[args.code].to_json(), markdown(args.code))
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add CODE, or --all."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "code", nargs="?", type=_code, metavar="CODE", help="a check code, e.g. import-failed"
    )
    which.add_argument("--all", action="store_true", help="every check code, in order")


COMMAND = Command(
    name="explain",
    summary="Explain a check code: what it means, an example, and how to fix it.",
    examples="""\
examples:
  codegenie-bench explain rubric-imported
  codegenie-bench explain module-missing --format json
  codegenie-bench explain --all                every code, in the order check knows them
""",
    run=run,
    configure=configure,
)
