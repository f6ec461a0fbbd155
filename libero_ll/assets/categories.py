"""The registries of the asset library: category name → model, problem class → arena.

The models themselves live in `objects` (movable things), `fixtures` (furniture and appliances)
and `arenas` (scene families); importing this module fills the registries from all three.
"""

from __future__ import annotations

from libero_ll.assets.models import Arena, Model
from libero_ll.registry import Registry

CATEGORIES: Registry[Model] = Registry("category")
ARENAS: Registry[Arena] = Registry("problem class")


def register_category(model: Model) -> Model:
    """Record a model under its category name."""
    return CATEGORIES.register(model.category)(model)


def get_model(category: str) -> Model:
    """The model of a category; a LiberoError listing the known categories when unknown."""
    return CATEGORIES.get(category)


def affordances() -> dict[str, list[str]]:
    """Category name → its affordance region names, the form the BDDL validator takes."""
    return {name: [r.name for r in CATEGORIES.get(name).all_regions] for name in CATEGORIES}


def category_facts() -> dict:
    """Category name → its CategoryFacts (kind, what Open/Close/TurnOn/TurnOff act on, which regions things go
    In and which they stand On), the form the BDDL validator takes for the checks that need more than region
    names."""
    from libero_ll.bddl.validate import CategoryFacts

    tops = {
        a.workspace_category: (a.table_full_size[0] / 2, a.table_full_size[1] / 2)
        for a in (ARENAS.get(k) for k in ARENAS)
        if a.table_full_size is not None
    }
    out = {}
    for name in CATEGORIES:
        model = CATEGORIES.get(name)
        controls = {region: model.part(part).joint.kind for region, part in model.controls}
        relations = {r.name: tuple(r.relations) for r in model.all_regions}
        top = tops.get(name) if model.kind == "workspace" else None
        out[name] = CategoryFacts(model.kind, controls, relations, top, front=model.front)
    return out


# Filling the registries: each module registers its models on import.
from libero_ll.assets import arenas, fixtures, objects  # noqa: E402,F401
