"""``patchbay schema``: print the JSON Schema of ``patchset.yaml``."""

from __future__ import annotations

from ..model import json_schema
from .common import print_json


def run() -> int:
    print_json(json_schema())
    return 0
