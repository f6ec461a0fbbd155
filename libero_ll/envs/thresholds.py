"""Every tolerance the goal predicates use, in one place (metres unless stated).

Tests build states just inside and just outside each of these.
"""

# On(a, b) with b an object or fixture: a's centre may be this far from b's centre horizontally.
ON_XY_TOLERANCE = 0.045
# On(a, b): a's centre must be at least this much higher than b's centre.
ON_MIN_HEIGHT = 0.0
# On(a, region with ranges): a's centre may lie this far outside the ranges (objects sampled at a
# range's edge drift by fractions of a millimetre while settling).
ON_RANGE_TOLERANCE = 0.01
# On(a, region): a's centre may lie this far above the top of the region's box.
ON_REGION_MAX_HEIGHT = 0.12
# On(fixture, region): a fixture's bottom may be this far from the surface.
FIXTURE_ON_TOLERANCE = 0.01
# In(a, region): tolerance on every side of the region's box, and extra allowance below its bottom.
IN_TOLERANCE = 0.005
IN_BOTTOM_TOLERANCE = 0.02
# Up(a): a's bottom must be this far above where it started.
UP_HEIGHT = 0.10
# Two bodies count as touching when MuJoCo reports a contact between them at a distance below this: any
# overlap, or a separation below it. MuJoCo reports a pair only once it is closer than the geoms' collision
# margins, which are 0 in our scenes, so every reported contact is an overlap and counts; the separation
# matters where margins are set (tests/envs/test_thresholds.py sets them to see it).
CONTACT_MARGIN = 0.002

# Open(x) / Close(x) of a drawer: how far it is pulled out of the cabinet, metres.
DRAWER_OPEN = 0.08
DRAWER_CLOSED = 0.01
# Open(x) / Close(x) of a door: the hinge angle, radians (1.05 rad is 60 degrees).
DOOR_OPEN = 1.05
DOOR_CLOSED = 0.05
# TurnOn(x) / TurnOff(x) of a stove: the knob angle, radians.
KNOB_ON = 0.6
KNOB_OFF = 0.15
# Where Open / TurnOn in a task's :init put the joint (Close / TurnOff put it at 0).
DRAWER_INIT_OPEN = 0.19
DOOR_INIT_OPEN = 1.6
KNOB_INIT_ON = 1.2
