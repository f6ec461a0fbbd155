"""The learner registry: each lifelong learning algorithm registers its class under a name."""

from __future__ import annotations

from libero_ll.registry import Registry

LEARNERS: Registry = Registry(
    "learner", hint="one of your own is named once its code is imported: plugins=[FILE.py] (docs/extending.md)"
)
register_learner = LEARNERS.register


def make_learner(name: str, policy, train_cfg, learner_cfg: dict):
    """Build the learner registered as `name` around `policy` (LiberoError listing known names)."""
    import libero_ll.learners  # noqa: F401  (registers the built-in learners)

    return LEARNERS.get(name)(policy, train_cfg, dict(learner_cfg or {}))
