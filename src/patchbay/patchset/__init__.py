"""The patchset document: its schema (model), its loading, its JSON Schema, YAML with line
numbers, validation, the input files, the lock file, the order of patches, blanks and
placeholders, and edits of it as text.
It imports only the shared top-level modules and :mod:`patchbay.diff` (patch files it reads)."""
