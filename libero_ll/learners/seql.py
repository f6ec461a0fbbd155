"""SeqL: fine-tune the same policy on each task in turn, the lower bound of lifelong learning."""

from libero_ll.learners.base import Learner
from libero_ll.learners.registry import register_learner


@register_learner("seql")
class SeqL(Learner):
    """Sequential fine-tuning: the shared loop with no additions."""
