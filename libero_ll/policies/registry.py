"""The policy registry: architectures register under a name; ``make_policy`` builds one from a config."""

from __future__ import annotations

from typing import Any, Mapping

from libero_ll.registry import Registry



def _not_a_policy(obj) -> str | None:
    """What keeps `obj` from being a policy: a class deriving from BasePolicy with a dataclass as its
    config_class."""
    import dataclasses

    from libero_ll.policies.base import BasePolicy

    if not (isinstance(obj, type) and issubclass(obj, BasePolicy)):
        return f"{getattr(obj, '__name__', repr(obj))} is not a class deriving from libero_ll.policies.BasePolicy"
    config = obj.config_class
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        return f"{obj.__name__}.config_class must be a dataclass (a PolicyConfig subclass), not {config!r}"
    return None


POLICIES: Registry = Registry(
    "policy", hint="one of your own is named once its code is imported: plugins=[FILE.py] (docs/extending.md)",
    check=_not_a_policy,
)
register_policy = POLICIES.register


def make_policy(name: str, cfg: Any, shape_meta: Mapping[str, Any]):
    """Build the policy registered as ``name``.

    Args:
        name: registry name, e.g. "resnet_t".
        cfg: the policy's config: its dataclass, a mapping or an OmegaConf config of its keys, or None for
            the defaults. A "name" key, if present, must equal ``name``.
        shape_meta: {"image_shape": (H, W, 3), "lowdim": {key: size}, "action_dim": A, "task_emb_dim": D}.

    Raises:
        LiberoError: for an unknown name (listing the known ones) or unknown config keys.
    """
    # Importing the package registers the built-in architectures.
    import libero_ll.policies  # noqa: F401
    from libero_ll.errors import LiberoError

    cls = POLICIES.get(name)
    if cfg is not None and not hasattr(cfg, "__dataclass_fields__"):
        cfg = _as_dict(cfg)
        if isinstance(cfg, dict):
            given = cfg.pop("name", name)
            if given != name:
                raise LiberoError(f"policy config names {given!r} but {name!r} was asked for")
    return cls(cfg, shape_meta)  # a cfg that is not a mapping is refused there (`coerce_config`), naming it


def _as_dict(cfg: Any):
    """A mapping or an OmegaConf mapping as a dict; anything else as it is (a list: as a list)."""
    if isinstance(cfg, Mapping):
        return dict(cfg)
    from omegaconf import OmegaConf

    try:
        cfg = OmegaConf.to_container(cfg, resolve=True)
    except ValueError:  # not an OmegaConf config
        return cfg
    return dict(cfg) if isinstance(cfg, Mapping) else cfg
