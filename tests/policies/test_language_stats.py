"""Task embeddings centred on a run's instructions and scaled to their spread (policy.cfg.standardize_language)."""

import math

import numpy as np
import pytest
import torch

from libero_ll.errors import LiberoError
from libero_ll.experiments.checkpoint import load_policy_weights
from libero_ll.policies import make_policy

D = 6
META = {"image_shape": (16, 16, 3), "lowdim": {"gripper_states": 2}, "action_dim": 7, "task_emb_dim": D}
TINY = dict(
    image_keys=[], lowdim_keys=["gripper_states"], embed_size=8, extra_embedding_size=8, language_proj_size=8,
    transformer_layers=1, heads=1, head_size=8, mlp_size=8, gmm_hidden=[8], seq_len=2,
)


def unit(rows):
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# Two instructions that differ by little (cosine about 0.995), and a third one far from both.
CLOSE = unit([[1, 0.1, 0.3, 0.2, 0.4, 0.1], [1, 0.1, 0.3, 0.2, 0.4, 0.2], [0.1, 1, -0.2, 0.3, 0.0, 0.5]])


def read(policy, embs):
    return policy._task_emb(embs).detach().numpy().astype(np.float64)


def test_by_default_the_embeddings_are_read_as_before_scaled_by_sqrt_d():
    policy = make_policy("resnet_t", TINY, META)
    assert policy.cfg.standardize_language is False
    assert torch.equal(policy._task_emb(CLOSE), torch.as_tensor(CLOSE) * math.sqrt(D))


def test_run_statistics_centre_the_distinct_instructions_and_scale_them_to_unit_spread():
    policy = make_policy("resnet_t", {**TINY, "standardize_language": True}, META)
    before = read(policy, CLOSE)
    # A repeated instruction (tasks sharing one) does not weigh twice.
    assert policy.set_language_stats(np.concatenate([CLOSE, CLOSE[:1]])) is True
    out = read(policy, CLOSE)
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(np.sqrt((out ** 2).mean()), 1.0, rtol=1e-5)
    # One scale for every component: the readings are an affine map of the embeddings, directions kept.
    centred = CLOSE - CLOSE.mean(axis=0)
    np.testing.assert_allclose(out, centred / np.sqrt(centred.var(axis=0).mean()), rtol=1e-4, atol=1e-5)
    # Readings of the same size as before (a root mean square of 1 per component), with the instructions'
    # differences larger: the part they all share is gone.
    np.testing.assert_allclose(np.sqrt((before ** 2).mean()), 1.0, rtol=1e-5)
    assert np.linalg.norm(out[0] - out[1]) > 1.5 * np.linalg.norm(before[0] - before[1])
    cosine = lambda r: r[0] @ r[1] / np.linalg.norm(r[0]) / np.linalg.norm(r[1])  # noqa: E731
    assert cosine(out) < cosine(before) - 0.01


def test_fewer_than_two_distinct_instructions_leave_the_defaults_and_a_wrong_width_is_refused():
    policy = make_policy("resnet_t", TINY, META)
    assert policy.set_language_stats(np.concatenate([CLOSE[:1], CLOSE[:1]])) is False
    assert not policy.language_mean.any() and float(policy.language_scale) == pytest.approx(math.sqrt(D))
    with pytest.raises(LiberoError, match="policy was built for 6 dims"):
        policy.set_language_stats(np.ones((3, 4), np.float32))


def test_the_statistics_travel_with_the_weights_and_older_weights_load_with_the_defaults(tmp_path):
    policy = make_policy("resnet_t", {**TINY, "standardize_language": True}, META)
    policy.set_language_stats(CLOSE)
    fresh = make_policy("resnet_t", TINY, META)
    fresh.load_state_dict(policy.state_dict())
    np.testing.assert_array_equal(read(fresh, CLOSE), read(policy, CLOSE))

    # Weights saved before these statistics existed: the policy reads the embeddings as those were trained on.
    old = {k: v for k, v in policy.state_dict().items() if k not in ("language_mean", "language_scale")}
    assert set(policy.state_dict()) - set(old) == {"language_mean", "language_scale"}
    loaded = make_policy("resnet_t", {**TINY, "standardize_language": True}, META)
    loaded.set_language_stats(CLOSE)  # set, then replaced by what the old file means
    loaded.load_state_dict(old)
    assert torch.equal(loaded._task_emb(CLOSE), torch.as_tensor(CLOSE) * math.sqrt(D))
    path = tmp_path / "old.pt"
    torch.save({"policy": old}, path)
    again = make_policy("resnet_t", TINY, META)
    again.set_language_stats(CLOSE)
    load_policy_weights(again, path)
    assert torch.equal(again._task_emb(CLOSE), torch.as_tensor(CLOSE) * math.sqrt(D))
    # A file that holds statistics gives them to the policy it is loaded into.
    torch.save({"policy": policy.state_dict()}, path)
    load_policy_weights(again, path)
    np.testing.assert_array_equal(read(again, CLOSE), read(policy, CLOSE))
    assert not torch.equal(again._task_emb(CLOSE), torch.as_tensor(CLOSE) * math.sqrt(D))
    # Other missing entries are still refused.
    del old[next(k for k in old if k.endswith("weight"))]
    torch.save({"policy": old}, path)
    with pytest.raises(LiberoError, match="missing"):
        load_policy_weights(again, path)


def test_a_bad_setting_is_refused_with_its_name():
    with pytest.raises(LiberoError, match="standardize_language"):
        make_policy("resnet_t", {**TINY, "standardize_language": "yes"}, META)
