"""The Gaussian-mixture head: log-probabilities, the std floor, the mode."""

import math

import torch

from libero_ll.policies.gmm import GMMHead, gmm_distribution, gmm_mode


def _normal_logpdf(x, mu, sigma):
    return -0.5 * ((x - mu) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)


def test_log_prob_matches_hand_computation():
    # Two components in 2-D with weights 1/4 and 3/4.
    logits = torch.tensor([0.0, math.log(3.0)])
    means = torch.tensor([[0.0, 0.5], [-0.5, 0.2]])
    stds = torch.tensor([[1.0, 0.5], [0.3, 2.0]])
    x = torch.tensor([0.1, -0.2])
    p0 = math.exp(_normal_logpdf(0.1, 0.0, 1.0) + _normal_logpdf(-0.2, 0.5, 0.5))
    p1 = math.exp(_normal_logpdf(0.1, -0.5, 0.3) + _normal_logpdf(-0.2, 0.2, 2.0))
    expected = math.log(0.25 * p0 + 0.75 * p1)
    got = gmm_distribution(logits, means, stds).log_prob(x).item()
    assert abs(got - expected) < 1e-5


def test_min_std_is_respected_and_means_stay_in_the_action_box():
    head = GMMHead(4, 3, num_modes=2, hidden_sizes=[8], min_std=1e-3)
    with torch.no_grad():
        head.scale_layer.weight.zero_()
        head.scale_layer.bias.fill_(-100.0)
        head.mean_layer.bias.fill_(50.0)
    logits, means, stds = head.params(torch.randn(5, 4))
    assert logits.shape == (5, 2) and means.shape == (5, 2, 3) and stds.shape == (5, 2, 3)
    assert torch.all(stds >= 1e-3)
    assert torch.allclose(stds, torch.full_like(stds, 1e-3))
    assert torch.all(means.abs() <= 1.0)


def test_batch_shape_sampling_and_mode():
    head = GMMHead(6, 7, num_modes=5, hidden_sizes=[16, 16])
    dist = head(torch.randn(2, 3, 6))
    assert dist.batch_shape == (2, 3) and dist.event_shape == (7,)
    assert dist.sample().shape == (2, 3, 7)
    assert dist.log_prob(torch.zeros(2, 3, 7)).shape == (2, 3)

    logits = torch.tensor([[0.0, 2.0, 1.0]])
    means = torch.tensor([[[0.1, 0.1], [0.7, -0.7], [0.3, 0.3]]])
    mode = gmm_mode(gmm_distribution(logits, means, torch.ones(1, 3, 2)))
    assert torch.allclose(mode, torch.tensor([[0.7, -0.7]]))
