"""Each goal-predicate threshold just inside and just outside (spec: bddl.md), on the quickstart soup scene.

Every test holds all but one quantity fixed and moves that one across its threshold by a millimetre or two,
so it fails if the threshold's value moves by 5 mm or its comparison changes. States are set with qpos and
`mj_forward` only (no stepping), so positions are exact; where a predicate also needs contact, the test asserts
the contact holds on both sides (or, where no real object can touch at that height, says so and fixes it).
"""

from __future__ import annotations

import numpy as np
import pytest

from libero_ll.envs import thresholds as th

MM = 0.001
# The values as documented (docs/assets.md, "Goal predicates"; CONTACT_MARGIN in thresholds.py's own comment).
# States are built from these, not from `th`, so a changed constant in thresholds.py fails a test rather
# than moving the test's states along with it; `test_documented_values` says which constant moved.
ON_MIN_HEIGHT = 0.0  # "a is above b"
ON_REGION_MAX_HEIGHT = 0.12  # "at most 12 cm above"
IN_TOLERANCE = 0.005  # "0.5 cm tolerance"
IN_BOTTOM_TOLERANCE = 0.02  # "2 cm below"
CONTACT_MARGIN = 0.002


def _forward(env):
    import mujoco

    env.data.qvel[:] = 0
    mujoco.mj_forward(env.model, env.data)


def _place(env, inst: str, pos) -> None:
    """Put an instance's free joint at world position `pos`, keeping its orientation."""
    adr = env._joint_qpos[inst]
    env.data.qpos[adr : adr + 3] = pos
    _forward(env)


def _pair_dists(env, a: str, b: str) -> list[float]:
    """Distances of the contacts MuJoCo reports between instances a and b."""
    g = env.geometry
    ia, ib = g.index[a], g.index[b]
    out = []
    for c in env.data.contact[: env.data.ncon]:
        o1, o2 = g.geom_owner[c.geom1], g.geom_owner[c.geom2]
        if {o1, o2} == {ia, ib}:
            out.append(float(c.dist))
    return out


def test_on_min_height(soup_env):
    """On(cream_cheese, plate) needs the cheese's centre strictly higher than the plate's (ON_MIN_HEIGHT):
    the cheese sits at the plate's centre horizontally, overlapping it (so they touch on both sides), with
    its centre 2 mm above and then 2 mm below plate centre + ON_MIN_HEIGHT."""
    env = soup_env
    env.reset(seed=0)
    g = env.geometry
    plate = g.pos("plate_1")
    for dz, expected in [(+2 * MM, True), (-2 * MM, False)]:
        _place(env, "cream_cheese_1", [plate[0], plate[1], plate[2] + ON_MIN_HEIGHT + dz])
        pa = g.pos("cream_cheese_1")
        assert np.hypot(*(pa[:2] - plate[:2])) < 1e-9  # horizontally centred, well within ON_XY_TOLERANCE
        assert g.touching("cream_cheese_1", "plate_1")
        assert g.on("cream_cheese_1", "plate_1") is expected, dz


@pytest.mark.parametrize("kind", ["range", "site"])
def test_on_region_max_height(soup_env, monkeypatch, kind):
    """On(can, region) holds up to ON_REGION_MAX_HEIGHT above the region (for a table range: the can's centre
    above the table top; for a site region: above the top of the region's box), and not beyond.

    No object of this scene can touch its target with its centre 12 cm up, so contact is fixed to true
    here: only the height crosses the threshold (the contact part has its own test below)."""
    env = soup_env
    env.reset(seed=0)
    g = env.geometry
    monkeypatch.setattr(g, "touching", lambda a, b: True)
    if kind == "range":
        region = "main_table_alphabet_soup_init_region"
        target, ranges = g.range_regions[region]
        origin, rot = g.surface_frame(target)
        x0, y0, x1, y1 = ranges[0]
        base = origin + rot @ np.array([(x0 + x1) / 2, (y0 + y1) / 2, 0.0])
        up = rot[:, 2]
        top = ON_REGION_MAX_HEIGHT
    else:
        region = "basket_1_contain_region"
        box = g.site_region(region)
        base, up = box.center, box.rot[:, 2]
        top = box.half[2] + ON_REGION_MAX_HEIGHT
    for dz, expected in [(top - 2 * MM, True), (top + 2 * MM, False)]:
        _place(env, "alphabet_soup_1", base + up * dz)
        assert g.on("alphabet_soup_1", region) is expected, dz
    # The lower end holds too: a centre just above the table top is On, just below is not (ranges only).
    if kind == "range":
        for dz, expected in [(+1 * MM, True), (-1 * MM, False)]:
            _place(env, "alphabet_soup_1", base + up * dz)
            assert g.on("alphabet_soup_1", region) is expected, dz


def test_in_bottom_tolerance(soup_env):
    """In(can, basket region) allows the can's centre IN_TOLERANCE + IN_BOTTOM_TOLERANCE below the region's
    box and no further: the can, at the region's centre horizontally and sunk into the basket's floor (so it
    touches the basket on both sides), sits 2 mm above and then 2 mm below that limit."""
    env = soup_env
    env.reset(seed=0)
    g = env.geometry
    region = "basket_1_contain_region"
    box = g.site_region(region)
    limit = box.half[2] + IN_TOLERANCE + IN_BOTTOM_TOLERANCE
    for dz, expected in [(-limit + 2 * MM, True), (-limit - 2 * MM, False)]:
        _place(env, "alphabet_soup_1", box.center + box.rot[:, 2] * dz)
        assert g.touching("alphabet_soup_1", "basket_1")
        assert g.inside("alphabet_soup_1", region) is expected, dz


@pytest.mark.parametrize("axis, sign", [(0, +1), (0, -1), (1, +1), (1, -1)])
def test_in_tolerance_horizontal(soup_env, axis, sign):
    """In(can, basket region) allows the can's centre IN_TOLERANCE beyond each side of the region's box:
    resting on the basket floor, the can is 2 mm inside and then 2 mm outside half + IN_TOLERANCE along one
    box axis, touching the basket both times."""
    env = soup_env
    env.reset(seed=0)
    g = env.geometry
    region = "basket_1_contain_region"
    box = g.site_region(region)
    can_half = g.half_z["alphabet_soup_1"]
    # Centre height: the can's bottom 4 mm into the basket floor (the region's bottom face).
    floor = -box.half[2] + can_half - 0.004
    limit = box.half[axis] + IN_TOLERANCE
    for d, expected in [(limit - 2 * MM, True), (limit + 2 * MM, False)]:
        local = np.array([0.0, 0.0, floor])
        local[axis] = sign * d
        _place(env, "alphabet_soup_1", box.center + box.rot @ local)
        assert g.touching("alphabet_soup_1", "basket_1")
        assert g.inside("alphabet_soup_1", region) is expected, (axis, sign, d)


def test_contact_margin(soup_env):
    """Two bodies count as touching when their separation is below CONTACT_MARGIN. The scene's geoms have no
    collision margin (MuJoCo reports only overlaps), so the can's and table's geoms get a 1 cm margin here,
    making MuJoCo report the near-contact; the can, upright above the table, is then 1 mm and 4 mm apart
    from it (CONTACT_MARGIN - 1 mm, + 2 mm)."""
    env = soup_env
    env.reset(seed=0)
    g = env.geometry
    rest = g.pos("alphabet_soup_1")
    # The gap at rest (a hair of penetration after settling): measured, so the separations below are exact.
    gap0 = min(_pair_dists(env, "alphabet_soup_1", "main_table"))
    geoms = np.isin(g.geom_owner, [g.index["alphabet_soup_1"], g.index["main_table"]])
    saved = env.model.geom_margin.copy()
    try:
        env.model.geom_margin[geoms] = 0.01
        for sep, expected in [(CONTACT_MARGIN - 1 * MM, True), (CONTACT_MARGIN + 2 * MM, False)]:
            _place(env, "alphabet_soup_1", rest + [0, 0, sep - gap0])
            dists = _pair_dists(env, "alphabet_soup_1", "main_table")
            assert dists and min(dists) == pytest.approx(sep, abs=2e-4), (sep, dists)
            assert g.touching("alphabet_soup_1", "main_table") is expected, sep
    finally:
        env.model.geom_margin[:] = saved
        _forward(env)
    # Without the margin nothing is reported once they part, however small the gap.
    _place(env, "alphabet_soup_1", rest + [0, 0, 0.5 * MM - gap0])
    assert not g.touching("alphabet_soup_1", "main_table")


def test_documented_values():
    assert (th.ON_MIN_HEIGHT, th.ON_REGION_MAX_HEIGHT, th.IN_TOLERANCE, th.IN_BOTTOM_TOLERANCE, th.CONTACT_MARGIN) == (
        ON_MIN_HEIGHT, ON_REGION_MAX_HEIGHT, IN_TOLERANCE, IN_BOTTOM_TOLERANCE, CONTACT_MARGIN)
