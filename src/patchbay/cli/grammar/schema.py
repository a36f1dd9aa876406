"""``patchbay schema``: its arguments and its handler."""

from __future__ import annotations

import argparse


def arguments(_p: argparse.ArgumentParser) -> None:
    """Add ``patchbay schema``'s arguments to its parser."""
    pass


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay schema`` with the parsed arguments."""
    from ..commands import schema

    return schema.run()
