"""One module per command; each exposes ``run(...) -> int`` (the exit code). cli.py wires them."""
