"""The patchset document: its schema (model), loading with file:line errors, the JSON Schema,
YAML with line numbers, validation, the input files, the lock file, the order of patches,
blanks and placeholders, and edits of it as text. Below the shared top-level modules it imports
only the path gate (:mod:`patchbay.environment.paths`, for every path the document names), the
kinds' registry (which kind writes whole files) and the journal's atomic write (the lock file)."""
