"""The reports of ``check``, ``grade`` and ``compare``, in every ``--format``.

:mod:`.formats` is the one table of report formats (each name, and its
renderer of each kind of report); :mod:`.documents` holds the typed reports
the renderers take (one run's, the shards' :mod:`.merge` merged, or two
grade reports :mod:`.compare` compared), and :mod:`.sink` what they write
to. The renderers: :mod:`.text`, :mod:`.json_report`, :mod:`.github`,
:mod:`.junit` (JUnit XML) and :mod:`.sarif` (SARIF 2.1.0); :mod:`.summary`
is the Markdown of ``$GITHUB_STEP_SUMMARY`` (and compare's ``--format
markdown``), :mod:`.digest` what proves that shards saw one bench, :mod:`.reader`
is the one reader of a JSON report given on the command line (``merge``,
``compare``: typed, finite, bounded, consistent with its own results), and
:mod:`.files` writes a report atomically.
"""
