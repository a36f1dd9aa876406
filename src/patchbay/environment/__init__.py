"""The engine being patched: target roots found in its interpreter, its installed
distributions and their RECORD, the tree with staged changes, the one path gate, pristine
file contents and project names. It imports the document (:mod:`patchbay.patchset`) and diffs."""
