"""Command handlers of the walk, one module per family; each registers its commands with
:func:`~patchbay.analysis.commands.handles` when imported."""
