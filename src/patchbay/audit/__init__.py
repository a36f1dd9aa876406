"""``patchbay audit``: patchsets, waivers and undeclared engine patching, as CI findings.

- :mod:`.rules` — the rule registry (stable codes, severities) and :class:`Finding`;
- :mod:`.config` — ``[tool.patchbay]`` / ``patchbay.toml``;
- :mod:`.checks` — patch and waiver rules (PB1xx-PB3xx);
- :mod:`.scanner` — undeclared patching in scripts and Dockerfiles (PB4xx);
- :mod:`.changes` — what a change touches, asked of git (``--changed-since REF``);
- :mod:`.pull_request` — a change's audit: script findings of its files, PB107;
- :mod:`.run` — :func:`run_audit`, which ties them together;
- :mod:`.formats` — table, JSON, GitHub workflow commands, SARIF;
- :mod:`.waived` — which findings a waiver covers; :mod:`.cache` and :mod:`.documents` — what
  was analysed and parsed before; :mod:`.store` — the cache folder (trusted as ssh trusts its
  keys) and its sealed files.

It imports the analyser, the document, the environment (project names), the waivers and the
upstream states (``--upstream``), never the apply core or the CLI.
"""

from .rules import RESERVED, RULES, Finding, Rule, Severity, Suppression
from .run import AuditResult, run_audit

__all__ = [
    "RESERVED",
    "RULES",
    "AuditResult",
    "Finding",
    "Rule",
    "Severity",
    "Suppression",
    "run_audit",
]
