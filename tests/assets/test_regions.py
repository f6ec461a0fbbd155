"""Which affordance regions of the library things go In and which they stand On: the facts the task-file
validator checks In and On against (libero_ll/bddl/validate.py)."""

from __future__ import annotations

from libero_ll.assets.categories import CATEGORIES, category_facts, get_model

IN, ON, BOTH = ("in",), ("on",), ("in", "on")


def test_containers_surfaces_and_shelf_layers():
    relations = {name: dict(f.relations) for name, f in category_facts().items()}
    drawers = {"top_region": IN, "middle_region": IN, "bottom_region": IN, "top_side": ON}
    assert relations["wooden_cabinet"] == relations["white_cabinet"] == drawers
    assert relations["microwave"] == {"heating_region": IN, "top_side": ON}
    assert relations["flat_stove"] == {"cook_region": ON}
    assert relations["wine_rack"] == {"top_region": ON}
    assert relations["wooden_two_layer_shelf"] == {"bottom_region": BOTH, "top_region": BOTH, "top_side": ON}
    assert relations["desk_caddy"] == {f"{side}_contain_region": IN for side in ("front", "back", "left", "right")}
    assert relations["basket"] == relations["wooden_tray"] == {"contain_region": IN}
    # Every region of every category says which it is (the default, both, is only for a shelf's layers).
    for name in CATEGORIES:
        for region in get_model(name).all_regions:
            assert region.relations in (IN, ON, BOTH), (name, region.name)
            assert region.relations != BOTH or name == "wooden_two_layer_shelf", (name, region.name)


def test_the_task_generator_puts_things_on_surfaces_and_in_containers():
    from libero_ll.tasks.behaviours import CONTAINER_REGION, FIXTURE_SURFACE

    for category, region in FIXTURE_SURFACE.items():
        assert "on" in get_model(category).region(region).relations, (category, region)
    for category, region in CONTAINER_REGION.items():
        assert "in" in get_model(category).region(region).relations, (category, region)
    # Open/Close of a drawer acts on a region that things go In.
    for name in CATEGORIES:
        model = get_model(name)
        for region, part in model.controls:
            if region and model.part(part).joint.kind == "drawer":
                assert model.region(region).relations == IN, (name, region)
