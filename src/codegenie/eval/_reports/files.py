"""Report files: read a JSON report given on the command line; write one whole, or append to one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from codegenie.eval._atomic import write_atomically
from codegenie.eval._output import readable
from codegenie.eval._paths import FileRefused, read_regular_file
from codegenie.eval.errors import ReportsInvalid

__all__ = ("REPORT_LIMIT", "append_text", "read_json_report", "write_report")

#: The largest report read: a report of 100,000 task classes stays well under it.
REPORT_LIMIT: Final = 512 * 1024 * 1024


def read_json_report(path: Path) -> object:
    """Return the JSON value the report file at ``path`` holds (what merge and compare read).

    Only a regular file of at most :data:`REPORT_LIMIT` bytes is read (a FIFO
    never blocks the command), as UTF-8. Raises ``ReportsInvalid`` with one
    sentence naming the file when it cannot be read, is not UTF-8, or is not
    JSON (a truncated file, nesting deeper than the parser goes); what the
    value holds is the caller's to check.
    """
    try:
        data, _ = read_regular_file(str(path), REPORT_LIMIT)
        return json.loads(data.decode("utf-8"))
    except FileRefused as refused:
        problem = f"cannot read {path}: the file {refused.reason}"
    except OSError as error:
        problem = f"cannot read {path}: {error.strerror or error}"
    except UnicodeDecodeError as error:
        problem = f"{path} is not UTF-8 text (byte {error.start} is not UTF-8)"
    except ValueError as error:  # JSONDecodeError, or an integer too long to convert
        problem = f"{path} is not JSON: {error}"
    except RecursionError:
        problem = f"{path} is not JSON this command reads: it is nested too deeply"
    raise ReportsInvalid((problem,))


def write_report(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through the package's one atomic write.

    A reader never sees half a report: the file is written beside its
    target, synced and renamed into place (:mod:`codegenie.eval._atomic`). A
    path the locale could not decode is written as the text it stands for
    (:func:`readable`). Raises ``OSError`` when the directory cannot be
    written.
    """
    write_atomically(path, readable(text).encode("utf-8"))


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, as GitHub expects of ``$GITHUB_STEP_SUMMARY``."""
    with path.open("a", encoding="utf-8") as stream:
        stream.write(readable(text))
