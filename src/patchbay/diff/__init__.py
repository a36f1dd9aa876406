"""Diffs: the unified/git diff parser, hunk states and their description, patch identity, and
the git helpers that compute binary results, merges and diffs in a scratch folder. It imports
only the shared top-level modules and the path gate of :mod:`patchbay.environment`."""
