"""``codegenie-bench``: the command line for curators, the harness and CI.

The only package that prints, reads ``sys.argv``, exits or configures logging.
:func:`main` returns the exit code. The package is laid out so that each part
fits in a reader's head:

- :mod:`._app` parses the command line, runs one command and turns what it
  raises into output and an exit code — in :func:`._app.fail`, the one place
  where errors become exit codes (through each error class's ``exit_code``,
  never through message text);
- :mod:`._base` holds what every command shares: :class:`._base.Command`
  (name, summary, examples, its options and its ``run``), :class:`._base.Output`
  (where results, notes and diagnostics go, in which format, in colour or not)
  and :class:`UsageError`;
- one module per command, ``cmd_<name>.py``, each defining ``COMMAND``.

Adding a command is adding a ``cmd_<name>.py`` with its ``COMMAND`` and
naming it in :data:`._app.COMMANDS`; a command raises library errors and
lets :func:`._app.fail` report them.

Modules are imported inside the commands that need them, so the cheap
command lines (``--help``, ``--version``, ``list``, ``schema``) import neither
the loader nor structlog.

Output is hostile-proof (``docs/security.md``): every string from a manifest, a
path or a registration is printed with its control characters escaped; a
reader that goes away or a closed stdout ends the command quietly with its
usual exit status; under ``--format json`` every failure, usage errors and
internal errors included, is one JSON error document on stdout. The commands
that import registrations (``show``, ``plan``, ``check``, ``grade``) write their results
to a private copy of stdout while file descriptor 1 points at stderr, so
nothing a registration writes, by any route, reaches stdout.
"""

from __future__ import annotations

from codegenie.eval.cli._app import main
from codegenie.eval.cli._base import UsageError

__all__ = ("UsageError", "main")
