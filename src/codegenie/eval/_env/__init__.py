"""A task class's own environment: its Python and packages, built once with uv, kept by digest.

A manifest entry may declare ``environment = "<requirements file>"`` and
``python = "3.12"``. :mod:`.requirements` checks the file,
:mod:`.python` finds the interpreter, :mod:`.spec` says what defines an
environment and derives its digest, :mod:`.store` keeps built environments
(the user's cache directory, one directory per digest, checked before use)
and :mod:`.build` builds one, atomically and once however many ask.
Nothing here runs a rubric: :meth:`.store.Environment.interpreter` hands the
sandbox the interpreter to run it with, and what to mount for it.
"""
