"""The least an all-or-nothing Python applier of a YAML patchset does: a lower bound, not a tool.

``bench_apply.py`` runs this file with the CLI's own interpreter, as
``python _floor_applier.py PATCHSET TREE``, beside ``patchbay apply``, to show what part of the
CLI's cold-apply ratio any Python program that reads a YAML patchset and can roll back must pay
on this machine. It does only the work such a program cannot skip:

1. start the interpreter and import its YAML parser and record library (PyYAML, msgspec), and
   read ``PATCHSET/patchset.yaml``;
2. read each patch, and each file it modifies; replace every hunk's preimage at the line its
   header names (no search, no fuzz: the generated patches apply exactly);
3. keep each original in a journal folder and ``fsync`` the journal's list once, so that a
   failure from here on can be rolled back;
4. write each new file to a temporary name and rename it over the old one, keeping the mode;
5. write a ledger (path, hash before, hash after per file) with one ``fsync``, and remove the
   journal.

It checks nothing else: no path containment or links, no hunk classification (applied,
pending, conflicting), no image guard, no lock, no per-file ``fsync``, no ledger blobs, no
creation, deletion, rename or mode change. patchbay does all of these; a CLI slower than this
floor by less than the time those checks take has little left to gain. Any input it does not
understand makes it exit 1 with a message (the benchmark then reports the failure).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys

import msgspec
import yaml

HUNK_HEADER = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse(patch: bytes) -> list[tuple[str, list[tuple[int, list[bytes], list[bytes]]]]]:
    """``[(path after strip 1, [(old start line, old lines, new lines), ...]), ...]``."""
    files: list[tuple[str, list[tuple[int, list[bytes], list[bytes]]]]] = []
    lines = patch.split(b"\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith(b"+++ b/"):
            files.append((line[6:].decode(), []))
            continue
        match = HUNK_HEADER.match(line)
        if not match:
            continue
        old_left = int(match[2] or 1)
        new_left = int(match[4] or 1)
        old: list[bytes] = []
        new: list[bytes] = []
        while old_left > 0 or new_left > 0:
            body = lines[i]
            i += 1
            sign, text = body[:1], body[1:]
            if sign != b"+":
                old.append(text)
                old_left -= 1
            if sign != b"-":
                new.append(text)
                new_left -= 1
        files[-1][1].append((int(match[1]), old, new))
    return files


def main(patchset: str, tree: str) -> int:
    """Apply every diff of ``patchset`` to ``tree``; 0 when done, 1 on anything unexpected."""
    with open(os.path.join(patchset, "patchset.yaml"), "rb") as fh:
        doc = yaml.load(fh, Loader=yaml.CSafeLoader)
    planned: list[tuple[str, bytes, bytes]] = []
    for entry in doc["patches"]:
        with open(os.path.join(patchset, entry["file"]), "rb") as fh:
            patch = fh.read()
        for rel, hunks in parse(patch):
            path = os.path.join(tree, rel)
            with open(path, "rb") as fh:
                before = fh.read()
            lines = before.split(b"\n")
            shift = 0
            for start, old, new in hunks:
                at = start - 1 + shift
                if lines[at : at + len(old)] != old:
                    where = f"{entry['file']}: {rel}"
                    print(f"{where}: a hunk does not apply at line {start}", file=sys.stderr)
                    return 1
                lines[at : at + len(old)] = new
                shift += len(new) - len(old)
            planned.append((path, before, b"\n".join(lines)))

    state = os.path.join(tree, ".floor-state")
    journal = os.path.join(state, "journal")
    os.makedirs(journal)
    kept = []
    for n, (path, before, _after) in enumerate(planned):
        with open(os.path.join(journal, str(n)), "wb") as fh:
            fh.write(before)
        kept.append(path)
    with open(os.path.join(journal, "list.json"), "wb") as fh:
        fh.write(msgspec.json.encode(kept))
        fh.flush()
        os.fsync(fh.fileno())

    records = []
    for path, before, after in planned:
        temporary = path + ".floor-tmp"
        with open(temporary, "wb") as fh:
            fh.write(after)
        os.chmod(temporary, os.stat(path).st_mode & 0o7777)
        os.rename(temporary, path)
        records.append(
            {
                "path": path,
                "before": hashlib.sha256(before).hexdigest(),
                "after": hashlib.sha256(after).hexdigest(),
            }
        )
    with open(os.path.join(state, "ledger.json"), "wb") as fh:
        fh.write(msgspec.json.encode(records))
        fh.flush()
        os.fsync(fh.fileno())
    for n in range(len(planned)):
        os.unlink(os.path.join(journal, str(n)))
    os.unlink(os.path.join(journal, "list.json"))
    os.rmdir(journal)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
