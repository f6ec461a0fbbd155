"""Procedural task generation (scene templates + behaviours → task files) and the benchmark suites."""
