"""``patchbay version``: its arguments and its handler."""

from __future__ import annotations

import argparse

from ... import __version__


def arguments(_p: argparse.ArgumentParser) -> None:
    """Add ``patchbay version``'s arguments to its parser."""
    pass


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay version`` with the parsed arguments."""
    print(__version__)
    return 0
