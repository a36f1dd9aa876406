"""patchbay: declarative, idempotent, all-or-nothing patches on a pinned inference-engine image.

The library is usable without the CLI: :func:`patchbay.patchset.loading.load_patchset`,
:func:`patchbay.environment.targets.resolve_environment`, then
:func:`patchbay.apply.plan.make_plan`, :func:`patchbay.apply.engine.apply_patchset`,
:func:`patchbay.apply.revert.revert_patchset` and :func:`patchbay.apply.verify.verify_patchset`.
"""

__version__ = "0.1.0"
