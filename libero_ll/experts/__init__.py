"""Scripted demonstrators: skills on the operational-space controller and a planner from goals."""
