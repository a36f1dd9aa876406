"""``python -m patchbay``: the same as the ``patchbay`` command."""

from patchbay.cli import main

main()
