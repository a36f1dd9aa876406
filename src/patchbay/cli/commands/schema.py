"""``patchbay schema``: print the JSON Schema of ``patchset.yaml``."""

from __future__ import annotations

import json
import sys

from ...patchset.schema import json_schema


def run() -> int:
    """Print the schema exactly as ``docs/patchset.schema.json`` holds it (a JSON Schema is a
    document of its own: no ``schema_version`` key is added, unlike patchbay's reports)."""
    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0
