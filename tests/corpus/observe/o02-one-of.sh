#!/bin/bash
# Two baselines of the same fix: the diff for the older scheduler, and for the current one.
set -e
SITE=$(pip show demo-engine | sed -n 's/^Location: //p')
cd "$SITE"
apply_one_of() {
  for d in "$@"; do
    if git apply --check -p1 "$d" 2>/dev/null; then
      git apply -p1 "$d"
      echo "applied $d"
      return 0
    fi
  done
  echo "none of $* applies" >&2
  return 1
}
HERE=$(cd "$(dirname "$0")" && pwd)
# demo-engine #77: capture a 128 graph as well (two baselines)
apply_one_of "$HERE/o02/capture-old.diff" "$HERE/o02/capture-new.diff"
