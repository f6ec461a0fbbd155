"""Gaussian-mixture action head: an MLP maps features to a mixture of diagonal Gaussians over actions."""

from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical, Independent, MixtureSameFamily, Normal


def gmm_distribution(logits: torch.Tensor, means: torch.Tensor, stds: torch.Tensor) -> MixtureSameFamily:
    """A mixture of diagonal Gaussians from its parameters.

    Args:
        logits: (..., K) unnormalised log-weights of the K components.
        means: (..., K, A) component means in action units.
        stds: (..., K, A) component standard deviations, positive.

    Returns:
        A distribution with batch shape ``...`` and event shape (A,).
    """
    # Argument validation walks every tensor on each call; the head guarantees valid values.
    components = Independent(Normal(means, stds, validate_args=False), 1, validate_args=False)
    return MixtureSameFamily(Categorical(logits=logits, validate_args=False), components, validate_args=False)


def gmm_log_prob(
    logits: torch.Tensor, means: torch.Tensor, stds: torch.Tensor, x: torch.Tensor, valid: torch.Tensor
) -> torch.Tensor:
    """Log-density of ``x`` under a mixture of diagonal Gaussians, counting only the dimensions marked valid.

    Leaving a dimension out of every component's product of per-dimension densities is the marginal over it,
    so a target with missing entries (an action chunk running past its demo's end) still has a proper
    likelihood. With every dimension valid this equals ``gmm_distribution(...).log_prob(x)``.

    Args:
        logits: (..., K) unnormalised log-weights.
        means, stds: (..., K, A) component parameters.
        x: (..., A) targets.
        valid: (..., A) bool, False on dimensions to leave out.

    Returns:
        (...) log-densities.
    """
    z = (x[..., None, :] - means) / stds
    per_dim = -0.5 * z * z - torch.log(stds) - 0.5 * math.log(2.0 * math.pi)
    per_dim = torch.where(valid[..., None, :], per_dim, torch.zeros((), device=per_dim.device))
    return torch.logsumexp(torch.log_softmax(logits, dim=-1) + per_dim.sum(dim=-1), dim=-1)


def gmm_mode(dist: MixtureSameFamily) -> torch.Tensor:
    """The mean of the most likely component, (..., A): a deterministic action from a mixture."""
    best = dist.mixture_distribution.logits.argmax(dim=-1)
    means = dist.component_distribution.base_dist.loc
    index = best[..., None, None].expand(*best.shape, 1, means.shape[-1])
    return means.gather(-2, index).squeeze(-2)


def gmm_sample_with(dist: MixtureSameFamily, uniforms: torch.Tensor, normals: torch.Tensor) -> torch.Tensor:
    """A sample of the mixture made from given random numbers, (N, A): the component whose cumulative weight
    first exceeds ``uniforms`` (N,), in [0, 1), then its mean plus its standard deviations times ``normals``
    (N, A), standard normal. Distributed as ``dist.sample()``; the numbers may come from any source (one
    stream per rollout), so that the same numbers give the same action on any device and in any batch."""
    logits = dist.mixture_distribution.logits
    means, stds = dist.component_distribution.base_dist.loc, dist.component_distribution.base_dist.scale
    cumulative = torch.cumsum(torch.softmax(logits.float(), dim=-1), dim=-1)
    chosen = (uniforms.to(cumulative)[:, None] >= cumulative).sum(dim=-1).clamp_(max=logits.shape[-1] - 1)
    rows = torch.arange(len(chosen), device=chosen.device)
    return means[rows, chosen] + stds[rows, chosen] * normals.to(means)


class GMMHead(nn.Module):
    """MLP from features to a Gaussian mixture over actions (tanh means, softplus stds).

    Args:
        input_size: width of the input feature vector.
        action_dim: number of action dimensions (7 here).
        num_modes: number of mixture components.
        hidden_sizes: widths of the MLP's hidden layers (the paper uses two of 1024).
        min_std: lower bound added to every standard deviation, in action units.
    """

    def __init__(
        self,
        input_size: int,
        action_dim: int,
        num_modes: int = 5,
        hidden_sizes: Sequence[int] = (1024, 1024),
        min_std: float = 0.05,
    ):
        super().__init__()
        self.action_dim = action_dim
        self.num_modes = num_modes
        self.min_std = min_std
        layers: list[nn.Module] = []
        width = input_size
        for hidden in hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        self.trunk = nn.Sequential(*layers)
        self.mean_layer = nn.Linear(width, num_modes * action_dim)
        self.scale_layer = nn.Linear(width, num_modes * action_dim)
        self.logit_layer = nn.Linear(width, num_modes)

    def params(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mixture parameters for features (..., input_size): logits (..., K), means and stds (..., K, A)."""
        h = self.trunk(x)
        shape = (*x.shape[:-1], self.num_modes, self.action_dim)
        # tanh keeps the means inside the action box [-1, 1].
        means = torch.tanh(self.mean_layer(h)).view(shape)
        stds = F.softplus(self.scale_layer(h)).view(shape) + self.min_std
        return self.logit_layer(h), means, stds

    def forward(self, x: torch.Tensor) -> MixtureSameFamily:
        """The action distribution for features ``x`` (..., input_size), batch shape ``...``."""
        return gmm_distribution(*self.params(x))
