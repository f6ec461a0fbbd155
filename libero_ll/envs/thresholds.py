"""Every tolerance the goal predicates use, in one place (metres unless stated).

Tests build states just inside and just outside each of these.
"""

# On(a, b) with b an object or fixture: a's centre may be this far from b's centre horizontally.
ON_XY_TOLERANCE = 0.045
# On(a, b): a's centre must be at least this much higher than b's centre.
ON_MIN_HEIGHT = 0.0
# On(a, region): a's centre may lie this far above the top of the region's box.
ON_REGION_MAX_HEIGHT = 0.12
# In(a, region): tolerance on every side of the region's box, and extra allowance below its bottom.
IN_TOLERANCE = 0.005
IN_BOTTOM_TOLERANCE = 0.02
# Up(a): a's bottom must be this far above where it started.
UP_HEIGHT = 0.10
# Two bodies count as touching when MuJoCo reports a contact with penetration at most this
# (negative distance) or a separation below it.
CONTACT_MARGIN = 0.002
