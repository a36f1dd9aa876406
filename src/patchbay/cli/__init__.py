"""The command line and everything that prints: the entry point (:func:`main`), the argparse
grammar, one module per command in ``commands/``, and the renderers of the library's results.
It may import every other wing; nothing outside it imports it."""

from .entry import main

__all__ = ["main"]
