"""Scene families (BDDL problem classes): the table or floor, where the robot stands, the cameras."""

from __future__ import annotations

from libero_ll.assets.categories import ARENAS
from libero_ll.assets.models import Arena

ARENAS.register("LIBERO_Tabletop_Manipulation")(
    Arena(problem_class="LIBERO_Tabletop_Manipulation", workspace="main_table")
)
