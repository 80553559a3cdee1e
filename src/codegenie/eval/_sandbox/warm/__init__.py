"""Warm workers: a sandbox and a warm interpreter per worker, a fork per run.

:mod:`~codegenie.eval._sandbox.warm.worker` is the harness's side (starting a worker,
handing it runs, watching them); :mod:`~codegenie.eval._sandbox.warm.zygote` is the
program the worker's interpreter runs inside its sandbox.
"""
