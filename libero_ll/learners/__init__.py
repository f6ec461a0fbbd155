"""Lifelong learners: one file per algorithm, each a few hooks on the shared loop in `base`."""

from libero_ll.learners import er, ewc, mtl, packnet, seql  # noqa: F401  (registration)
from libero_ll.learners.base import Learner, TrainConfig
from libero_ll.learners.registry import LEARNERS, make_learner, register_learner

__all__ = ["LEARNERS", "Learner", "TrainConfig", "make_learner", "register_learner"]
