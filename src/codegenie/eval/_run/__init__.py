"""A rubric run as data: its spec (:mod:`.spec`) and the digests of its trees (:mod:`.digest`).

Everything a run is — the rubric, its task class, its case, its
candidate, the interpreter, the limits, the sandbox — is one frozen,
picklable :class:`~codegenie.eval._run.spec.RunSpec`: the runner executes
it, the ledger keys it, and it can cross a process or machine boundary
without importing bench code.
"""
