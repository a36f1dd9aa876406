"""The apply core: planning and judging every patch, the base guard, the transaction and its
journal, the ledger, the state lock, the verified no-op, ``check``, trials and child process
groups. It imports the document, diffs, the environment and the patch kinds, never the CLI."""
