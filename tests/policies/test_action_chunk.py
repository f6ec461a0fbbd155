"""Action chunks: the head predicts this step's action and the next C-1, trained on every known target, and a
rollout executes the mean of the predictions made for each step (temporal ensembling)."""

import math

import numpy as np
import pytest
import torch

from libero_ll.errors import LiberoError
from libero_ll.policies.gmm import gmm_distribution, gmm_log_prob, gmm_mode
from test_architectures import NAMES, make_batch, step_obs, tiny_policy, window

C = 3


def test_masked_log_prob_is_the_mixture_and_its_marginal():
    torch.manual_seed(0)
    logits, means = torch.randn(4, 3, 5), torch.randn(4, 3, 5, 14)
    stds, x = torch.rand(4, 3, 5, 14) + 0.1, torch.randn(4, 3, 14)
    every = torch.ones(4, 3, 14, dtype=torch.bool)
    assert torch.allclose(gmm_log_prob(logits, means, stds, x, every),
                          gmm_distribution(logits, means, stds).log_prob(x), atol=1e-5)
    first = every.clone()
    first[..., 7:] = False
    assert torch.allclose(gmm_log_prob(logits, means, stds, x, first),
                          gmm_distribution(logits, means[..., :7], stds[..., :7]).log_prob(x[..., :7]), atol=1e-5)


def test_chunk_loss_counts_every_known_future_action_once():
    policy = tiny_policy("resnet_t", action_chunk=C, gmm_modes=1).eval()
    batch = make_batch(b=2, t=5)
    batch["mask"][1, 3:] = False  # the second window's demo ends after 3 steps
    loss = policy.compute_loss(batch)
    with torch.no_grad():
        _, means, stds = policy.head.params(policy.features(batch))
    means, stds = means[:, :, 0].view(2, 5, C, 7), stds[:, :, 0].view(2, 5, C, 7)
    total, count = 0.0, 0
    for b in range(2):
        for t in range(5):
            for k in range(C):
                if t + k < 5 and batch["mask"][b, t + k]:
                    a, m, s = batch["actions"][b, t + k], means[b, t, k], stds[b, t, k]
                    total += float((0.5 * ((a - m) / s) ** 2 + torch.log(s) + 0.5 * math.log(2 * math.pi)).sum())
                    count += 1
    assert count == 12 + 6  # 3+3+3+2+1 targets in the full window, 3+2+1 in the one whose demo ended
    assert loss.item() == pytest.approx(total / count, rel=1e-5)


def test_chunk_loss_takes_targets_past_the_window_from_next_actions():
    """With the actions after the window in the batch, the last steps' chunks are trained on them too; a
    "next_mask" all False is the window alone, and one-step windows still train every chunk entry."""
    policy = tiny_policy("resnet_t", action_chunk=C, gmm_modes=1).eval()
    batch = make_batch(b=2, t=5)
    batch["mask"][1, 3:] = False
    nxt = torch.rand(2, C - 1, 7) * 2 - 1
    alone = policy.compute_loss(batch).item()
    none_known = {**batch, "next_actions": nxt, "next_mask": torch.zeros(2, C - 1, dtype=torch.bool)}
    assert policy.compute_loss(none_known).item() == pytest.approx(alone, rel=1e-6)
    known = torch.tensor([[True, True], [False, False]])  # the second window's demo has ended
    loss = policy.compute_loss({**batch, "next_actions": nxt, "next_mask": known})
    with torch.no_grad():
        _, means, stds = policy.head.params(policy.features(batch))
    means, stds = means[:, :, 0].view(2, 5, C, 7), stds[:, :, 0].view(2, 5, C, 7)
    every = torch.cat([batch["actions"], nxt], dim=1)
    every_known = torch.cat([batch["mask"], known], dim=1)
    total, count = 0.0, 0
    for b in range(2):
        for t in range(5):
            for k in range(C):
                if batch["mask"][b, t] and every_known[b, t + k]:
                    a, m, s = every[b, t + k], means[b, t, k], stds[b, t, k]
                    total += float((0.5 * ((a - m) / s) ** 2 + torch.log(s) + 0.5 * math.log(2 * math.pi)).sum())
                    count += 1
    assert count == 5 * C + 6  # every target of the first window, 3+2+1 in the one whose demo ended
    assert loss.item() == pytest.approx(total / count, rel=1e-5)
    # One-step windows: without the next actions only chunk entry 0 has a target; with them, all C.
    one = window(batch, 0, 1)
    with torch.no_grad():
        _, means, stds = policy.head.params(policy.features(one))
    means, stds = means[:, 0, 0].view(2, C, 7), stds[:, 0, 0].view(2, C, 7)
    targets = batch["actions"][:, :C]
    nll = (0.5 * ((targets - means) / stds) ** 2 + torch.log(stds) + 0.5 * math.log(2 * math.pi)).sum(-1)  # (2, C)
    assert policy.compute_loss(one).item() == pytest.approx(float(nll[:, 0].mean()), rel=1e-5)
    full = {**one, "next_actions": batch["actions"][:, 1:C], "next_mask": torch.ones(2, C - 1, dtype=torch.bool)}
    assert policy.compute_loss(full).item() == pytest.approx(float(nll.mean()), rel=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_rollout_executes_the_mean_of_the_predictions_for_each_step(name):
    extra = {"rnn_horizon": 0} if name == "resnet_rnn" else {}
    policy = tiny_policy(name, action_chunk=C, deterministic_eval=True, **extra).eval()
    batch = make_batch(b=2, t=5)
    emb = batch["task_emb"].numpy()
    policy.reset(2)
    actions = [policy.act(step_obs(batch, t), emb) for t in range(5)]
    with torch.no_grad():
        # The chunk predicted at step s, from the window of steps 0..s.
        chunks = [gmm_mode(policy.head(policy.features(window(batch, 0, s + 1))))[:, -1].view(2, C, 7)
                  for s in range(5)]
    for t in range(5):
        made = [chunks[s][:, t - s] for s in range(max(0, t - C + 1), t + 1)]
        assert np.allclose(actions[t], torch.stack(made).mean(0).clamp(-1, 1).numpy(), atol=1e-5)
    # A reset env starts with no pending predictions: it acts as a fresh policy does, the other goes on.
    policy.reset(2, env_ids=[1])
    both = policy.act(step_obs(batch, 0), emb)
    fresh = tiny_policy(name, action_chunk=C, deterministic_eval=True, **extra).eval()
    alone = fresh.act(step_obs(batch, 0, slice(1, 2)), emb[1:])
    assert np.allclose(both[1], alone[0], atol=1e-5)
    assert not np.allclose(both[0], alone[0], atol=1e-5)


def test_sampled_chunks_and_config_errors():
    policy = tiny_policy("vit_t", action_chunk=4).eval()
    batch = make_batch(b=3)
    actions = policy.act(step_obs(batch, 0), batch["task_emb"].numpy())
    assert actions.shape == (3, 7) and np.all(np.abs(actions) <= 1)
    with pytest.raises(LiberoError, match="action_chunk"):
        tiny_policy("resnet_t", action_chunk=0)
    with pytest.raises(LiberoError, match="encoder_stem"):
        tiny_policy("resnet_rnn", encoder_stem="pixel")


@pytest.mark.parametrize("chunk", [1, C])
def test_step_weights_give_the_weighted_mean_of_the_steps_terms(chunk):
    """A batch's "weight" (SequenceDataset's grasp_weight) weights each step's terms; all ones change nothing."""
    policy = tiny_policy("resnet_t", action_chunk=chunk, gmm_modes=1).eval()
    batch = make_batch(b=2, t=5)
    batch["mask"][1, 3:] = False
    plain = policy.compute_loss(batch).item()
    assert policy.compute_loss({**batch, "weight": torch.ones(2, 5)}).item() == pytest.approx(plain, rel=1e-6)
    with torch.no_grad():
        _, means, stds = policy.head.params(policy.features(batch))
    means, stds = means[:, :, 0].view(2, 5, chunk, 7), stds[:, :, 0].view(2, 5, chunk, 7)
    weight = torch.tensor([[1.0, 1.0, 4.0, 4.0, 1.0], [4.0, 1.0, 1.0, 1.0, 1.0]])
    total, count = 0.0, 0.0
    for b in range(2):
        for t in range(5):
            for k in range(chunk):
                if t + k < 5 and batch["mask"][b, t] and batch["mask"][b, t + k]:
                    a, m, s = batch["actions"][b, t + k], means[b, t, k], stds[b, t, k]
                    nll = float((0.5 * ((a - m) / s) ** 2 + torch.log(s) + 0.5 * math.log(2 * math.pi)).sum())
                    total += float(weight[b, t]) * nll
                    count += float(weight[b, t])
    weighted = policy.compute_loss({**batch, "weight": weight}).item()
    assert weighted == pytest.approx(total / count, rel=1e-5)
    assert weighted != pytest.approx(plain, rel=1e-3)
