"""The manifest: its model, reading and finding the file, and its JSON Schema."""
