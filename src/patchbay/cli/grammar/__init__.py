"""One module per sub-command of ``patchbay``: ``arguments(p)`` adds the command's arguments to
its parser and ``handle(args)`` turns the parsed arguments into a call of its
:mod:`patchbay.cli.commands` module, imported when it runs (a short command pays only for what
it needs). They import :mod:`patchbay.cli.arguments` and, when they run, ``commands/``."""
