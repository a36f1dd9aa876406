"""Carrying patchsets to where they run: pinned downloads (fetch), ``vendor`` into the lock,
offline bundles with patchbay itself and its installer, and the ``--record`` provenance of a
run. It imports the apply core, everything below it and the GitHub client (``vendor``), never
the CLI."""
