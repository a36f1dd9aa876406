"""``patchbay completion``: its arguments and its handler."""

from __future__ import annotations

import argparse
import sys

from ..arguments import SHELLS


def arguments(p: argparse.ArgumentParser) -> None:
    """Add ``patchbay completion``'s arguments to its parser."""
    p.add_argument("shell", metavar="SHELL", choices=SHELLS, help="bash, zsh or fish")


def handle(args: argparse.Namespace) -> int:
    """Run ``patchbay completion`` with the parsed arguments."""
    from argcomplete import shellcode

    sys.stdout.write(shellcode(["patchbay"], shell=args.shell))
    return 0
