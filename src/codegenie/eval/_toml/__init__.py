"""TOML reading with positions and limits: bounded decode and parse, the plain-layout parser, the lexical pre-scan, and key positions."""
