"""Authoring patches from the tree: ``capture`` (edits into a new patch), ``edit``/``refresh``,
``rebase`` onto a new image, and the ledger records of patches made in the tree (adopt). It
imports the apply core and everything below it, never the CLI."""
