"""CI reports rendered from the JSON documents of ``check`` and ``grade``.

Each renderer takes the document ``--format json`` prints (or ``merge``
builds from several), so a merged report and a single run render alike:
:mod:`.junit` (JUnit XML), :mod:`.sarif` (SARIF 2.1.0), :mod:`.summary`
(the Markdown of ``$GITHUB_STEP_SUMMARY``), :mod:`.digest` (what proves that
shards saw one bench), :mod:`.merge` (shards into one report) and
:mod:`.files` (writing a report atomically).
"""
