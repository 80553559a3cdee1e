"""The statistics of graded runs: pass@k over samples, and how two runs differ.

Pure functions of counts and verdicts, on the standard library alone:
:mod:`.passk` (the unbiased pass@k estimator) and :mod:`.compare` (the exact
McNemar test of two single-sample runs, a seeded paired bootstrap of the
pass@1 difference of two sampled ones).
"""
