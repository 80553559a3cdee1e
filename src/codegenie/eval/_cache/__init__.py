"""The cache of validated manifests.

Its directory rules, the entry format, the one writer and the one reader, the
served manifest and the fast ``list``.
"""
