"""Where a registration failed, and its traceback without the loader's frames.

When a registration raises, the loader raises ``TaskClassRegistrationFailed``
chained ``from`` what the registration raised. Its ``__traceback__`` runs
through the loader and the import system before it reaches the bench's own
code; a curator needs the other end: the deepest frame that lies under the
bench root (the helper module that raised, not the import line of
``registration.py``), and, on request, the traceback of the bench's code
alone — as pytest shows a collection error.

:func:`describe_failure` computes both from the exception. It is shared by
the command line (``show``, ``plan``) and by ``check``'s per-slug processes,
so both point at the same line. It reads source lines through ``linecache``
and imports nothing: a ``check`` worker imports it before any bench is on
``sys.path``.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from typing import Final

__all__ = ("TRACEBACK_LIMIT", "Failure", "describe_failure")

#: The longest traceback text kept, in characters; its beginning goes first.
TRACEBACK_LIMIT: Final = 16_000

# The import system's own frames, between two frames of the bench's code.
_IMPORT_MACHINERY: Final = ("<frozen importlib._bootstrap", "<frozen importlib._bootstrap_external")


@dataclass(frozen=True, slots=True)
class Failure:
    """Where a registration failed, and its traceback.

    ``file`` (absolute, symbolic links resolved) and ``line`` are the deepest
    place under the bench root where the failure happened — for a syntax
    error, the place of the error itself — or ``None`` when no part of the
    failure lies under the root. ``traceback`` is the formatted traceback of
    the bench's code: the frames before the first one under the root (the
    loader's, the import system's) and the import system's frames between the
    bench's own are left out; chained exceptions are shown the same way.
    """

    file: str | None
    line: int | None
    traceback: str


class _Root:
    """Answers "is this file under the bench root?", resolving each file once."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._prefix = os.path.join(os.path.realpath(root), "")
        self._seen: dict[str, str | None] = {}

    def resolve(self, filename: str | None) -> str | None:
        """Return ``filename`` resolved if it lies under the root, else ``None``."""
        if not filename or filename.startswith("<"):
            return None
        if filename not in self._seen:
            try:
                real = os.path.realpath(filename)
            except (OSError, ValueError):
                real = ""
            self._seen[filename] = real if real.startswith(self._prefix) else None
        return self._seen[filename]


def _own_frames(stack: traceback.StackSummary, root: _Root) -> traceback.StackSummary:
    """Return the frames from the first one under the root on, minus the import machinery."""
    start = next((i for i, frame in enumerate(stack) if root.resolve(frame.filename)), len(stack))
    kept = [frame for frame in stack[start:] if not frame.filename.startswith(_IMPORT_MACHINERY)]
    return traceback.StackSummary.from_list(kept)


def _trim(exception: traceback.TracebackException, root: _Root) -> None:
    """Cut the frames of ``exception`` and of every exception chained to it.

    A chained exception none of whose frames lies under the root did not
    happen in the bench's code (the loader was handling it when the import
    began): it is left out with its own chain.
    """
    seen: set[int] = set()
    pending: list[traceback.TracebackException] = [exception]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.stack = _own_frames(current.stack, root)
        for link in ("__cause__", "__context__"):
            chained = getattr(current, link)
            if chained is None:
                continue
            if _located(chained, root):
                pending.append(chained)
            else:
                setattr(current, link, None)


def _located(exception: traceback.TracebackException, root: _Root) -> bool:
    """Whether a frame of ``exception``, or the place of its syntax error, lies under the root."""
    if any(root.resolve(frame.filename) for frame in exception.stack):
        return True
    # Only a SyntaxError's TracebackException has a filename: the file that failed to parse.
    return root.resolve(getattr(exception, "filename", None)) is not None


def _deepest(
    exception: BaseException, stack: traceback.StackSummary, root: _Root
) -> tuple[str | None, int | None]:
    if isinstance(exception, SyntaxError):
        file = root.resolve(exception.filename)
        if file is not None:
            return file, exception.lineno
    for frame in reversed(stack):
        file = root.resolve(frame.filename)
        if file is not None:
            return file, frame.lineno
    return None, None


def _bounded(text: str) -> str:
    if len(text) <= TRACEBACK_LIMIT:
        return text
    head = text[: TRACEBACK_LIMIT // 4]
    tail = text[-(TRACEBACK_LIMIT * 3 // 4) :]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n  … ({cut} characters not shown)\n{tail}"


def describe_failure(exception: BaseException, root: str | os.PathLike[str]) -> Failure:
    """Return where ``exception`` (what a registration raised) failed under ``root``.

    ``root`` is the bench root the registration was imported from. Never
    raises: an exception that cannot be printed has the traceback module's
    ``<exception str() failed>`` for its message, and should formatting fail
    altogether (a registration that broke the ``traceback`` module it shares
    with its process), the failure has no location and says so.
    """
    try:
        under = _Root(root)
        formatted = traceback.TracebackException.from_exception(exception)
        file, line = _deepest(exception, formatted.stack, under)
        _trim(formatted, under)
        text = "".join(formatted.format())
    except Exception:
        return Failure(None, None, f"{type(exception).__name__}: <traceback cannot be formatted>\n")
    return Failure(file, line, _bounded(text))
