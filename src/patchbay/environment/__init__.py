"""The engine being patched: target roots found in its interpreter, its installed
distributions and their RECORD, the tree with staged changes, the one path gate, pristine
file contents and project names. It imports the document (:mod:`patchbay.patchset`), diffs,
and of the apply core only the ledger (originals patchbay kept) and the state folder's lock."""
