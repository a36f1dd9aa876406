"""``patchbay verify``: every patch present and every touched Python file compiles; with
``--installed``, every installed file of the engine's distributions matches its RECORD or a
declared patch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...carry.provenance import check_record_path, write_record
from .common import environment, load, print_json, say

if TYPE_CHECKING:
    from ...environment.targets import Environment
    from ...patchset.model import Patchset


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    output_format: str | None = None,
    installed: bool = False,
    dists: list[str] | None = None,
    record: Path | None = None,
    probe_timeout: float | None = None,
    as_json: bool = False,
) -> int:
    """Exit 0 when verified, 1 otherwise. ``output_format``: ``json``, or lines for people
    (``table`` and ``concise`` are the same here: one line per problem)."""
    as_json = as_json or output_format == "json"
    if record is not None:
        check_record_path(record)
    patchset = load(patchset_arg)
    env = environment(
        patchset, python, root, state_dir, extra_distributions=dists, probe_timeout=probe_timeout
    )
    if installed:
        return _installed(patchset, env, as_json=as_json, dists=dists, record=record)
    from ...apply.verify import verify_patchset
    from ...carry.provenance import provenance

    result = verify_patchset(patchset, env)
    if as_json:
        print_json({"ok": result.ok, "problems": result.problems, "compiled": result.compiled})
    elif result.ok:
        say(
            f"verified: {len(result.plan.reports)} patch(es) present, "
            f"{len(result.compiled)} Python file(s) compile"
        )
    else:
        for problem in result.problems:
            say(f"patchbay: verify: {problem}", err=True)
    if record is not None:
        doc = provenance(result.plan, command="verify")
        doc["verify"] = {"ok": result.ok, "problems": result.problems}
        write_record(record, doc)
    return 0 if result.ok else 1


def _installed(
    patchset: Patchset,
    env: Environment,
    *,
    as_json: bool,
    dists: list[str] | None,
    record: Path | None,
) -> int:
    from ...environment.installed import verify_installed

    result = verify_installed(patchset, env, dists)
    if as_json:
        print_json(result.to_json())
    else:
        for finding in result.undeclared:
            say(
                f"patchbay: verify: {finding.path}: undeclared {finding.kind} "
                f"({finding.distribution}): {finding.detail}",
                err=True,
            )
        checked = sum(d["checked"] for d in result.distributions.values())
        names = ", ".join(f"{n} {d['version']}" for n, d in result.distributions.items())
        verdict = "image as shipped" if not result.declared else "image as shipped plus"
        if result.ok:
            patches = sorted(
                {p for f in result.declared for p in (f.declared_by or "").split(", ") if p}
            )
            extra = f" {len(patches)} declared patch(es): {', '.join(patches)}" if patches else ""
            say(f"verified {checked} installed file(s) of {names}: {verdict}{extra}")
        else:
            say(
                f"patchbay: verify: {len(result.undeclared)} undeclared modification(s) in "
                f"{checked} installed file(s) of {names}",
                err=True,
            )
    if record is not None:
        from ...apply.plan import make_plan
        from ...carry.provenance import provenance

        doc = provenance(make_plan(patchset, env), command="verify --installed")
        doc["installed"] = result.to_json()
        write_record(record, doc)
    return 0 if result.ok else 1
