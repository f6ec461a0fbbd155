"""Evaluation: rollouts, the success tensor, lifelong-learning metrics, statistics and reports.

Import the submodules directly; this package imports nothing so that metrics stay usable without a simulator.
"""
