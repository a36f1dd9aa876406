"""Command handlers of the walk, one module per family; each registers its commands with
:func:`~patchbay.analysis.commands.handles` when imported. This package imports them all and
gives :data:`COMMANDS`, the table a :class:`~patchbay.analysis.walk.Walker` dispatches to."""

from __future__ import annotations

from ..commands import environment_change, inert_command, run_command, write_file
from ..walk import CommandTable
from . import diffs, files, installs, shell  # noqa: F401  (they register their commands)

COMMANDS = CommandTable(run_command, inert_command, environment_change, write_file)
"""The dispatch of :mod:`~patchbay.analysis.commands`, with every handler registered."""
