"""The learner registry: each lifelong learning algorithm registers its class under a name."""

from __future__ import annotations

from libero_ll.registry import Registry



def _not_a_learner(obj) -> str | None:
    """What keeps `obj` from being a learner: a class deriving from Learner whose `options` is a mapping."""
    from collections.abc import Mapping

    from libero_ll.learners.base import Learner

    if not (isinstance(obj, type) and issubclass(obj, Learner)):
        return f"{getattr(obj, '__name__', repr(obj))} is not a class deriving from libero_ll.learners.Learner"
    if not isinstance(obj.options, Mapping):
        return (f"{obj.__name__}.options must be a dict of option names and their defaults, not "
                f"{type(obj.options).__name__}")
    return None


LEARNERS: Registry = Registry(
    "learner", hint="one of your own is named once its code is imported: plugins=[FILE.py] (docs/extending.md)",
    check=_not_a_learner,
)


def register_learner(name: str):
    """Class decorator: register a Learner subclass as `name` (the name its messages then use)."""
    register = LEARNERS.register(name)

    def deco(cls):
        cls = register(cls)
        cls.registered_name = name
        return cls

    return deco


def make_learner(name: str, policy, train_cfg, learner_cfg: dict):
    """Build the learner registered as `name` around `policy` (LiberoError listing known names)."""
    import libero_ll.learners  # noqa: F401  (registers the built-in learners)

    return LEARNERS.get(name)(policy, train_cfg, dict(learner_cfg or {}))
