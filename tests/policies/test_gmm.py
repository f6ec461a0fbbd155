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


def test_a_sample_from_given_numbers_follows_the_mixture():
    """`gmm_sample_with` (each rollout's own stream) draws what `dist.sample()` draws: the components in
    proportion to their weights, each with its own mean and spread."""
    from libero_ll.policies.gmm import gmm_sample_with

    n = 40000
    logits = torch.log(torch.tensor([0.2, 0.5, 0.3])).expand(n, 3)
    means = torch.tensor([[-0.6, 0.0], [0.0, 0.5], [0.7, -0.4]]).expand(n, 3, 2)
    stds = torch.tensor([[0.05, 0.1], [0.05, 0.05], [0.1, 0.05]]).expand(n, 3, 2)
    dist = gmm_distribution(logits, means, stds)
    g = torch.Generator().manual_seed(0)
    x = gmm_sample_with(dist, torch.rand(n, generator=g), torch.randn(n, 2, generator=g))
    nearest = ((x[:, None, :] - means[0]) ** 2).sum(-1).argmin(-1)
    shares = torch.bincount(nearest, minlength=3).float() / n
    assert torch.allclose(shares, torch.tensor([0.2, 0.5, 0.3]), atol=0.01)
    for k in range(3):
        mine = x[nearest == k]
        assert torch.allclose(mine.mean(0), means[0, k], atol=0.01)
        assert torch.allclose(mine.std(0), stds[0, k], rtol=0.05)
    # The same numbers, the same action; the edges of [0, 1) pick the first and the last component.
    u = torch.tensor([0.0, 0.9999999])
    z = torch.zeros(2, 2)
    edge = gmm_sample_with(gmm_distribution(logits[:2], means[:2], stds[:2]), u, z)
    assert torch.equal(edge, torch.stack([means[0, 0], means[0, 2]]))
