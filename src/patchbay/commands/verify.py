"""``patchbay verify``: every patch present and every touched Python file compiles; with
``--installed``, every installed file of the engine's distributions matches its RECORD or a
declared patch."""

from __future__ import annotations

from pathlib import Path

from ..model import Patchset
from ..provenance import check_record_path, write_record
from ..targets import Environment
from .common import console, environment, err_console, load, print_json


def run(
    patchset_arg: str,
    *,
    python: str | None,
    root: Path | None,
    state_dir: Path | None,
    as_json: bool,
    installed: bool = False,
    dists: list[str] | None = None,
    record: Path | None = None,
    probe_timeout: float | None = None,
) -> int:
    """Exit 0 when verified, 1 otherwise (each problem printed on one line)."""
    if record is not None:
        check_record_path(record)
    patchset = load(patchset_arg)
    env = environment(
        patchset, python, root, state_dir, extra_distributions=dists, probe_timeout=probe_timeout
    )
    if installed:
        return _installed(patchset, env, as_json=as_json, dists=dists, record=record)
    from ..engine import verify_patchset
    from ..provenance import provenance

    result = verify_patchset(patchset, env)
    if as_json:
        print_json({"ok": result.ok, "problems": result.problems, "compiled": result.compiled})
    elif result.ok:
        console.print(
            f"verified: {len(result.plan.reports)} patch(es) present, "
            f"{len(result.compiled)} Python file(s) compile"
        )
    else:
        for problem in result.problems:
            err_console.print(f"patchbay: verify: {problem}", markup=False)
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
    from ..installed import verify_installed

    result = verify_installed(patchset, env, dists)
    if as_json:
        print_json(result.to_json())
    else:
        for finding in result.undeclared:
            err_console.print(
                f"patchbay: verify: {finding.path}: undeclared {finding.kind} "
                f"({finding.distribution}): {finding.detail}",
                markup=False,
            )
        checked = sum(d["checked"] for d in result.distributions.values())
        names = ", ".join(f"{n} {d['version']}" for n, d in result.distributions.items())
        verdict = "image as shipped" if not result.declared else "image as shipped plus"
        if result.ok:
            patches = sorted(
                {p for f in result.declared for p in (f.declared_by or "").split(", ") if p}
            )
            extra = f" {len(patches)} declared patch(es): {', '.join(patches)}" if patches else ""
            console.print(
                f"verified {checked} installed file(s) of {names}: {verdict}{extra}", markup=False
            )
        else:
            err_console.print(
                f"patchbay: verify: {len(result.undeclared)} undeclared modification(s) in "
                f"{checked} installed file(s) of {names}"
            )
    if record is not None:
        from ..engine import make_plan
        from ..provenance import provenance

        doc = provenance(make_plan(patchset, env), command="verify --installed")
        doc["installed"] = result.to_json()
        write_record(record, doc)
    return 0 if result.ok else 1
