"""Several samples per case: where they come from (a directory per sample, or JSON Lines).

:mod:`.jsonl` reads and checks a JSON Lines file of samples and writes each
sample where it is graded as a candidate directory. Not wired into ``grade``
yet (the samples issue's first pieces).
"""
