"""One module per command; each exposes ``run(...) -> int`` (the exit code) and does the
command's work and printing; :mod:`patchbay.cli.grammar` parses its arguments and calls it."""
