"""patchbay: declarative, idempotent, all-or-nothing patches on a pinned inference-engine image.

The library is usable without the CLI: :func:`patchbay.patchset.loading.load_patchset`,
:func:`patchbay.environment.targets.resolve_environment`, then :mod:`patchbay.apply.engine`'s
``make_plan``, ``apply_patchset``, ``revert_patchset`` and ``verify_patchset``.
"""

__version__ = "0.1.0"
