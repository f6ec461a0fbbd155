"""Fixtures: furniture and appliances welded to the world, some with joints (drawers, doors, knobs)."""

from __future__ import annotations
