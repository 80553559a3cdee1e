"""Child processes of the harness: started in a session of their own, watched, killed whole.

:mod:`~codegenie.eval._process.supervisor` is the one place that starts,
watches, kills and reaps them; :mod:`~codegenie.eval._process.output` keeps
their output within bounds; :mod:`~codegenie.eval._process.procfs` reads what
``/proc`` says about processes.
"""
