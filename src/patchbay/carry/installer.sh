#!/bin/sh
# Install patchbay from this bundle into a private virtual environment, with no network.
#   sh install-patchbay.sh [PYTHON [DEST]]
# PYTHON: the interpreter the environment is made from (default: the engine interpreter the
# bundle was made for, else python3). DEST: the environment (default: <bundle>/patchbay-env);
# it must be missing, empty, or an environment this installer made (then it is made again).
# Every wheel is checked against the bundle's manifest.json before anything is made, and only
# the bundle's wheels are installed: pip runs isolated (no index, no configuration file, no
# PIP_* variable) and the interpreter with -I (no PYTHON* variable, no user site).
# A failed install removes what it made. The engine's own environment is not touched.
# Prints the path of the patchbay command. Exit 2: refused (nothing made); 1: the install failed.
set -eu
me=install-patchbay.sh
marker=.made-by-install-patchbay
refuse() {
  echo "$me: $*" >&2
  exit 2
}
bundle=$(cd "$(dirname "$0")" && pwd)
wheels=$bundle/patchbay/wheels
if [ -n "${1:-}" ]; then
  python=$1
  command -v "$python" >/dev/null 2>&1 || refuse "PYTHON $python: no such interpreter"
else
  python=@PYTHON@
  if ! command -v "$python" >/dev/null 2>&1; then
    echo "$me: $python (the engine interpreter of the bundle) is not here; using python3" >&2
    python=python3
    command -v "$python" >/dev/null 2>&1 || refuse "no python3 here: give PYTHON ($me PYTHON)"
  fi
fi
dest=${2:-$bundle/patchbay-env}
case $dest in /*) ;; *) dest=$(pwd)/$dest ;; esac
unset PYTHONPATH PYTHONHOME  # also for the pip that --python starts in the environment
# no PIP_* variable of the caller's applies: pip's --isolated ignores most of them, but not
# all (PIP_PYTHON would send the install into another environment)
for var in $(env | sed -n 's/^\(PIP_[A-Za-z0-9_]*\)=.*/\1/p'); do
  unset "$var"
done

# DEST: made here, or empty, or one this installer made; nothing else is ever touched
made=
if [ -L "$dest" ]; then
  refuse "DEST $dest is a link: give the folder itself (or a new path)"
elif [ -d "$dest" ]; then
  if [ ! -f "$dest/$marker" ]; then
    entries=$(ls -A "$dest") || refuse "DEST $dest cannot be read"
    [ -z "$entries" ] || refuse "DEST $dest exists, is not empty and is not an environment" \
      "this installer made: refusing to touch it (give another DEST)"
  fi
elif [ -e "$dest" ] || [ -L "$dest" ]; then
  refuse "DEST $dest exists and is not a folder: refusing to touch it"
else
  made=1
fi

# every wheel against the manifest, and the compiled ones against PYTHON's version
"$python" -I - "$bundle" "$python" <<'CHECK' || exit 2
import hashlib, json, os, sys

bundle, given = sys.argv[1], sys.argv[2]
folder = "patchbay/wheels/"


def refuse(message):
    sys.stderr.write("install-patchbay.sh: " + message + "\n")
    sys.exit(2)


manifest = os.path.join(bundle, "manifest.json")
try:
    with open(manifest, encoding="utf-8") as f:
        files = json.load(f)["files"]
    carried = sorted(rel for rel in files if rel.startswith(folder))
except (OSError, ValueError, KeyError, TypeError, AttributeError):
    refuse(manifest + ": missing or unreadable: not a patchbay bundle")
try:
    present = sorted(folder + name for name in os.listdir(os.path.join(bundle, folder)))
except OSError:
    present = []
for rel in present:
    if rel not in files:
        refuse(os.path.join(bundle, rel) + " is not in the bundle's manifest.json: "
               "refusing to install anything")
if not carried:
    refuse(bundle + " carries no wheels of patchbay (bundled --without-patchbay?)")
for rel in carried:
    digest = hashlib.sha256()
    try:
        with open(os.path.join(bundle, rel), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        refuse(os.path.join(bundle, rel) + " is missing (listed in the bundle's manifest.json)")
    if digest.hexdigest() != files[rel]:
        refuse(os.path.join(bundle, rel) + " does not match the bundle's manifest.json "
               "(sha256): refusing to install anything")
# wheel file names: name-version[-build]-python-abi-platform.whl (PEP 427, PEP 425 tags)
major, minor = sys.version_info[:2]
for rel in carried:
    parts = rel[len(folder):-len(".whl")].split("-")
    pythons, abis = parts[-3].split("."), parts[-2].split(".")
    cpython = [t for t in pythons if t.startswith("cp")]
    if not cpython or any(t.startswith("py") for t in pythons):
        continue
    fits = sys.implementation.name == "cpython" and any(
        t == "cp%d%d" % (major, minor)
        or ("abi3" in abis and t[2:3] == str(major) and t[3:].isdigit() and int(t[3:]) <= minor)
        for t in cpython
    )
    if not fits:
        refuse("the bundle holds wheels for %s (%s) and PYTHON %s is %s %d.%d: give the "
               "interpreter of the engine the bundle was made for"
               % (".".join(cpython), rel[len(folder):], given, sys.implementation.name,
                  major, minor))
CHECK

# from here on, a failure removes what this run made (and only that)
empty_dest() {
  for entry in "$dest"/* "$dest"/.[!.]* "$dest"/..?*; do
    if [ -e "$entry" ] || [ -L "$entry" ]; then rm -rf "$entry"; fi
  done
}
undo() {
  if [ -n "$made" ]; then rm -rf "$dest"; else empty_dest; fi
}
mark() {
  echo "made by $me from $bundle; $me may remove its content and make it again" >"$dest/$marker"
}
finished=
trap '[ -n "$finished" ] || undo' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -n "$made" ]; then mkdir -p "$dest"; else empty_dest; fi
mark
if "$python" -I -m venv "$dest" >/dev/null 2>&1 && [ -x "$dest/bin/pip" ]; then
  set -- "$dest/bin/python" -I -m pip
else  # no ensurepip in this Python: the interpreter's own pip installs into the environment
  empty_dest
  mark
  "$python" -I -m venv --without-pip "$dest"
  set -- "$python" -I -m pip --python "$dest/bin/python"
fi
if ! PIP_CONFIG_FILE=/dev/null "$@" --isolated install --quiet --no-index --no-deps \
  --no-cache-dir --disable-pip-version-check "$wheels"/*.whl; then
  echo "$me: pip could not install the bundle's wheels with PYTHON $python (its error is" \
    "above); what it made at $dest is removed" >&2
  exit 1
fi
# patchbay and every dependency it declares import in the new environment
"$dest/bin/python" -I -c 'import sys; from patchbay.carry.selfcarry import check_environment as c
sys.exit(c())' || exit 1
"$dest/bin/patchbay" --version >/dev/null
finished=1
echo "$dest/bin/patchbay"
