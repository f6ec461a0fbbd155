"""Simulated environments built from task files."""
