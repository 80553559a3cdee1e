"""A rubric run as data: its spec, its environment, the digests of its trees.

The spec is :mod:`.spec`'s, the environment :mod:`.environment`'s, the
digests :mod:`.digest`'s.
Everything a run is — the rubric, its task class, its case, its
candidate, the command and the environment it runs in, the limits, the
sandbox — is one frozen, picklable :class:`~codegenie.eval._run.spec.RunSpec`:
the runner executes it, the ledger keys it, and it can cross a process or
machine boundary without importing bench code.
"""
