"""TOML reading with positions and limits.

Bounded decoding and parsing, the plain-layout parser, the lexical pre-scan
of nesting and sizes, and where each key is written.
"""
