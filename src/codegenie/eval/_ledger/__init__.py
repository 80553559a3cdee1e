"""The validation ledger: what a rubric run depends on (its key) and the store of results by key."""
