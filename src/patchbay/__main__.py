"""``python -m patchbay``: the same as the ``patchbay`` command."""

import sys

from patchbay.cli import main

sys.exit(main())
