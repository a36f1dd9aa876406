"""Carrying patchsets to where they run: pinned downloads (fetch), ``vendor`` into the lock,
offline bundles with patchbay itself and its installer, and the ``--record`` provenance of a
run. It imports the apply core, everything below it, the GitHub client (``vendor``) and the
shell grammar of :mod:`patchbay.analysis` (a diff cut from a pinned script's here-document),
never the CLI."""
