"""The reports of ``check`` and ``grade``, in every ``--format``.

:mod:`.formats` is the one table of report formats (each name, and its
renderer of each kind of report); :mod:`.documents` holds the typed reports
the renderers take (one run's, or the shards' :mod:`.merge` merged), and
:mod:`.sink` what they write to. The renderers: :mod:`.text`,
:mod:`.json_report`, :mod:`.github`, :mod:`.junit` (JUnit XML) and
:mod:`.sarif` (SARIF 2.1.0); :mod:`.summary` is the Markdown of
``$GITHUB_STEP_SUMMARY``, :mod:`.digest` what proves that shards saw one
bench, and :mod:`.files` writes a report atomically.
"""
