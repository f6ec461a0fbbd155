"""SeqL and ER on the shared loop: training steps, replay mixing, option checking."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from libero_ll.data.dataset import SequenceDataset, TaskData
from libero_ll.errors import LiberoError
from libero_ll.learners import TrainConfig, make_learner
from libero_ll.learners.base import pad_batch
from libero_ll.policies import make_policy

TINY = {
    "image_keys": ["agentview_rgb"], "lowdim_keys": ["gripper_states"], "embed_size": 8, "encoder_width": 4,
    "encoder_blocks": 1, "extra_embedding_size": 8, "language_proj_size": 8, "transformer_layers": 1,
    "heads": 1, "head_size": 8, "mlp_size": 8, "gmm_hidden": [16], "num_keypoints": 4, "seq_len": 4,
}
META = {"image_shape": (16, 16, 3), "lowdim": {"gripper_states": 2}, "action_dim": 7, "task_emb_dim": 5}


def _task(task_id: int, demos: int = 3, steps: int = 12) -> TaskData:
    rng = np.random.default_rng(task_id)
    return TaskData(
        task_id,
        [
            {
                "agentview_rgb": rng.integers(0, 255, (steps, 16, 16, 3), dtype=np.uint8),
                "gripper_states": rng.normal(size=(steps, 2)).astype(np.float32),
                "actions": rng.uniform(-1, 1, (steps, 7)).astype(np.float32),
            }
            for _ in range(demos)
        ],
        np.eye(5, dtype=np.float32)[task_id],
    )


def test_seql_epoch_changes_weights_and_returns_loss():
    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner("seql", policy, TrainConfig(epochs=1, batch_size=4, lr=1e-3), {})
    data = _task(0)
    ds = SequenceDataset([data], 4, ["agentview_rgb", "gripper_states"])
    before = [p.detach().clone() for p in policy.parameters()]
    learner.start_task(0, data)
    steps = []
    observe = learner.observe
    learner.observe = lambda batch: steps.append(observe(batch)) or steps[-1]
    loss = learner.train_epoch(ds)
    assert np.isfinite(loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))
    # Each step's loss is a detached scalar tensor, its own copy; the epoch's loss is their mean.
    assert len(steps) == -(-len(ds) // 4) and all(t.shape == () and not t.requires_grad for t in steps)
    assert loss == pytest.approx(np.mean([float(t) for t in steps]), rel=1e-9)


def _er_batch_on_task_1(train: TrainConfig, chunk: int = 1):
    """ER after task 0: the learner, and the batch its loss sees for the first 4 windows of task 1."""
    torch.manual_seed(0)
    policy = make_policy("resnet_t", {**TINY, "action_chunk": chunk}, META)
    learner = make_learner("er", policy, train, {"replay_batch_size": 3, "memory_demos": 2})
    t0, t1 = _task(0), _task(1)
    learner.start_task(0, t0)
    learner.end_task(0, t0)
    seen = {}
    original = policy.compute_loss

    def spy(batch):
        seen.update(batch)
        return original(batch)

    policy.compute_loss = spy
    learner.start_task(1, t1)
    ds = train.dataset([t1], policy)
    assert np.isfinite(float(learner.observe(ds.get_batch(np.arange(4)))))
    return learner, seen


def test_a_chunked_policys_replay_carries_the_actions_after_each_window():
    """A step's chunk reaches past its window: the replayed windows carry the actions after them as the
    current task's do (action_chunk - 1 of them), so that the two halves of a batch can be joined."""
    learner, batch = _er_batch_on_task_1(TrainConfig(epochs=1, batch_size=4), chunk=3)
    assert learner.replay.next_actions == 2
    assert batch["next_actions"].shape == (7, 2, 7) and batch["next_mask"].shape == (7, 2)
    # Task 1's windows 0..3 start at steps 0..3 of its first 12-step demo: the actions after are steps 4..7.
    first = _task(1).demos[0]["actions"]
    np.testing.assert_allclose(batch["next_actions"][:4].numpy(), np.stack([first[t + 4:t + 6] for t in range(4)]))
    _, plain = _er_batch_on_task_1(TrainConfig(epochs=1, batch_size=4))
    assert "next_actions" not in plain


def test_er_mixes_replay_of_earlier_tasks():
    learner, batch = _er_batch_on_task_1(TrainConfig(epochs=1, batch_size=4))
    assert learner.replay is not None and len(learner.memory[0].demos) == 2
    assert learner.memory_bytes() > 0
    ids = batch["task_id"].tolist()
    assert ids.count(1) == 4 and ids.count(0) == 3
    assert "weight" not in batch


def test_er_keeps_whole_demos_up_to_its_window_budget_as_the_paper_does():
    """The paper's memory: up to 1000 windows (one per demo step) of each finished task. Demos of 12 steps
    under a budget of 40 steps: 3 of 8 kept (36 steps), drawn at random; a cap on demos stops it sooner; a
    budget smaller than one demo still keeps one; 0 keeps nothing."""
    policy = make_policy("resnet_t", TINY, META)
    data = _task(0, demos=8)

    def kept(**opts):
        learner = make_learner("er", policy, TrainConfig(epochs=1, batch_size=4), opts)
        learner.end_task(0, data)
        return learner.chosen[0][1] if learner.chosen else []

    chosen = kept(memory_windows=40)
    assert len(chosen) == 3 and chosen == sorted(chosen) and chosen != [0, 1, 2]
    assert len(kept(memory_windows=40, memory_demos=2)) == 2
    assert len(kept(memory_windows=5)) == 1
    assert kept(memory_windows=0) == [] and kept(memory_demos=0) == []
    assert len(kept(memory_windows=None)) == 8
    assert len(kept()) == 8  # the default, 1000 windows, holds all 96 steps
    with pytest.raises(LiberoError, match="memory_windows must be a non-negative integer or null, got -1"):
        make_learner("er", policy, TrainConfig(), {"memory_windows": -1})

    # A run saved before the window budget existed goes on keeping whole tasks' demos, as it began.
    learner = make_learner("er", policy, TrainConfig(epochs=1, batch_size=4), {"memory_windows": 40})
    learner.start_task(0, data)
    state = learner.state_dict()
    assert state.pop("window_budget") is True
    learner.load_state_dict(state, [data])
    learner.end_task(0, data)
    assert learner.chosen[0][1] == list(range(8))
    # ... and one that kept no demos (memory_demos: 0) keeps none.
    learner = make_learner("er", policy, TrainConfig(epochs=1, batch_size=4), {"memory_demos": 0})
    state = learner.state_dict()
    del state["window_budget"]
    learner.load_state_dict(state, [data])
    learner.end_task(0, data)
    assert learner.chosen == []


def test_er_replays_with_the_grasp_weight_of_the_current_data():
    _, batch = _er_batch_on_task_1(TrainConfig(epochs=1, batch_size=4, grasp_weight=3.0, grasp_steps=5))
    # The replayed windows carry weights from the same rule (the random demos close their fingers often).
    assert batch["weight"].shape == (7, 4)
    assert (batch["weight"][4:] == 3.0).any()
    assert set(batch["weight"].unique().tolist()) <= {1.0, 3.0}


def test_er_replays_with_the_fingers_lead_of_the_current_data():
    learner, _ = _er_batch_on_task_1(TrainConfig(epochs=1, batch_size=4, gripper_lead=2))
    # The replayed windows' fingers' command is the memory's demos' own, 2 steps later (the last one's at the end).
    led = []
    for task in learner.memory:
        for demo in task.demos:
            grip = np.asarray(demo["actions"])[:, -1]
            led.append(grip[np.minimum(np.arange(len(grip)) + 2, len(grip) - 1)])
    replayed = learner.replay.get_batch(np.arange(len(learner.replay)))["actions"][:, 0, -1].numpy()
    np.testing.assert_array_equal(replayed, np.concatenate(led))
    assert not np.array_equal(replayed, np.concatenate([np.asarray(d["actions"])[:, -1] for t in learner.memory
                                                        for d in t.demos]))


def test_unknown_learner_and_option_are_named():
    policy = make_policy("resnet_t", TINY, META)
    with pytest.raises(LiberoError, match="seql"):
        make_learner("nope", policy, TrainConfig(), {})
    with pytest.raises(LiberoError, match="learner er: unknown options \\['replay_size'\\]"):
        make_learner("er", policy, TrainConfig(), {"replay_size": 3})


# ---------------------------------------------------------------------------------------------- EWC


def test_ewc_penalty_is_zero_at_anchor_and_grows_with_fisher_weighted_distance():
    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner("ewc", policy, TrainConfig(epochs=1, batch_size=4), {"lambda": 10.0, "gamma": 0.5})
    assert float(learner.penalty().detach()) == 0.0  # nothing anchored before the first task ends
    t0 = _task(0)
    learner.start_task(0, t0)
    learner.end_task(0, t0)
    assert all((f >= 0).all() for f in learner.fisher.values())
    assert any((f > 0).any() for f in learner.fisher.values())
    assert float(learner.penalty().detach()) == 0.0  # at the anchor

    # Known Fisher values: 3 on one parameter, 0 elsewhere.
    name, param = next((n, p) for n, p in policy.named_parameters() if p.dim() >= 2)
    learner.fisher = {n: torch.zeros_like(f) for n, f in learner.fisher.items()}
    learner.fisher[name].view(-1)[0] = 3.0
    for delta in (0.1, 0.2):
        with torch.no_grad():
            param.copy_(learner.anchor[name])
            param.view(-1)[0] += delta
            param.view(-1)[1] += 5.0  # zero Fisher: costs nothing
        assert float(learner.penalty().detach()) == pytest.approx(0.5 * 10.0 * 3.0 * delta**2, rel=1e-5)
    # The penalty's gradient pulls the weight back toward the anchor.
    policy.zero_grad()
    learner.penalty().backward()
    assert float(param.grad.view(-1)[0]) > 0 and float(param.grad.view(-1)[1]) == 0.0


def test_ewc_fisher_is_an_online_average_over_tasks():
    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner("ewc", policy, TrainConfig(epochs=1, batch_size=4), {"gamma": 0.9})
    t0, t1 = _task(0), _task(1)
    learner.start_task(0, t0)
    learner.end_task(0, t0)
    f0 = {n: f.clone() for n, f in learner.fisher.items()}
    learner.start_task(1, t1)
    learner.train_epoch(SequenceDataset([t1], 4, ["agentview_rgb", "gripper_states"]))
    stream = learner.rng.bit_generator.state
    f1 = learner.estimate_fisher(t1)
    learner.rng.bit_generator.state = stream  # end_task draws the same batches
    learner.end_task(1, t1)
    for n in f0:
        torch.testing.assert_close(learner.fisher[n], 0.9 * f0[n] + 0.1 * f1[n])
    assert learner.memory_bytes() == 2 * sum(p.numel() * 4 for p in policy.parameters())


def test_ewc_fisher_batches_cover_every_window_once_in_a_random_order(monkeypatch):
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner("ewc", policy, TrainConfig(epochs=1, batch_size=4), {})
    seen = []
    real = SequenceDataset.get_batch
    monkeypatch.setattr(SequenceDataset, "get_batch", lambda self, idx: seen.append(list(idx)) or real(self, idx))
    learner.estimate_fisher(_task(0))
    flat = [i for b in seen for i in b]
    assert sorted(flat) == list(range(36)) and len(seen) == 9
    assert flat != list(range(36))  # not demo by demo, in order


def test_ewc_in_the_form_of_libero_code_drops_the_half_and_sums_the_fishers():
    # LIBERO's released code: λ Σ F (θ − θ*)², and F ← γ F + F_k (the appendix: λ/2 and γ F + (1 − γ) F_k).
    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    opts = {"lambda": 10.0, "gamma": 0.9}
    paper = make_learner("ewc", policy, TrainConfig(epochs=1, batch_size=4), opts)
    code = make_learner("ewc", policy, TrainConfig(epochs=1, batch_size=4), {**opts, "form": "libero_code"})
    t0, t1 = _task(0), _task(1)
    for learner in (paper, code):
        learner.start_task(0, t0)
        learner.end_task(0, t0)
    f0 = {n: f.clone() for n, f in code.fisher.items()}
    torch.testing.assert_close(f0, paper.fisher)  # the same batches: both streams start from seed 0
    name, param = next((n, p) for n, p in policy.named_parameters() if p.dim() >= 2)
    with torch.no_grad():
        param.view(-1)[0] += 0.3
    torch.testing.assert_close(code.penalty(), 2.0 * paper.penalty())
    with torch.no_grad():
        param.view(-1)[0] -= 0.3
    stream = code.rng.bit_generator.state
    f1 = code.estimate_fisher(t1)
    code.rng.bit_generator.state = stream
    code.end_task(1, t1)
    for n in f0:
        torch.testing.assert_close(code.fisher[n], 0.9 * f0[n] + f1[n])


def test_ewc_fisher_in_training_mode_sees_augmented_windows():
    # With fisher_mode: train (LIBERO's code) the Fisher's passes shift and jitter the images; by default they
    # do not, and the policy's mode is put back either way.
    task = _task(0)
    fishers = {}
    for mode in ("eval", "train"):
        torch.manual_seed(0)
        policy = make_policy("resnet_t", TINY, META)
        learner = make_learner("ewc", policy, TrainConfig(epochs=1, batch_size=4), {"fisher_mode": mode})
        calls = []
        real = policy.augment.forward
        policy.augment.forward = lambda x, real=real, calls=calls, policy=policy: calls.append(policy.training) or real(x)
        policy.eval()
        fishers[mode] = learner.estimate_fisher(task)
        assert calls and set(calls) == {mode == "train"} and not policy.training
    assert any(not torch.equal(fishers["eval"][n], fishers["train"][n]) for n in fishers["eval"])
    with pytest.raises(LiberoError, match="fisher_mode must be one of eval, train"):
        make_learner("ewc", policy, TrainConfig(), {"fisher_mode": "both"})
    with pytest.raises(LiberoError, match="form must be one of paper, libero_code"):
        make_learner("ewc", policy, TrainConfig(), {"form": "code"})


# ---------------------------------------------------------------------------------------------- PackNet


def _outputs(policy, learner, k, batch):
    policy.eval()
    with learner.eval_context(k), torch.no_grad():
        return policy.features(batch).clone(), policy.compute_loss(batch).clone()


@pytest.mark.parametrize("norm", ["group", "batch"])
def test_packnet_keeps_earlier_tasks_outputs_bit_for_bit(norm):
    torch.manual_seed(0)
    policy = make_policy("resnet_t", {**TINY, "encoder_norm": norm}, META)
    learner = make_learner("packnet", policy, TrainConfig(epochs=1, batch_size=4, lr=1e-2), {"finetune_epochs": 1})
    keys = ["agentview_rgb", "gripper_states"]
    tasks = [_task(k) for k in range(3)]
    probes = [SequenceDataset([t], 4, keys).get_batch(np.arange(6)) for t in tasks]
    seen = []
    for k, data in enumerate(tasks):
        ds = SequenceDataset([data], 4, keys)
        learner.start_task(k, data)
        before = {n: p.detach().clone() for n, p in policy.named_parameters()}
        learner.train_epoch(ds)
        changed = {n for n, p in policy.named_parameters() if not torch.equal(before[n], p)}
        assert changed, "training changed no weight"
        if k > 0:
            # Only free weights learn after the first task: no bias or norm parameter moves.
            assert all(n in learner.owner for n in changed)
        learner.end_task(k, data)
        free_before = sum(int((m == 0).sum()) for m in learner.owner.values())
        for _ in range(learner.post_task_epochs()):
            learner.train_epoch(ds)
        assert sum(int((m == 0).sum()) for m in learner.owner.values()) == free_before
        seen.append(_outputs(policy, learner, k, probes[k]))
        for j in range(k + 1):
            weights = {n: p.detach().clone() for n, p in policy.named_parameters()}
            feats, loss = _outputs(policy, learner, j, probes[j])
            assert torch.equal(feats, seen[j][0]) and torch.equal(loss, seen[j][1]), f"task {j} changed after task {k}"
            # Evaluation contexts leave the weights as they were.
            assert all(torch.equal(weights[n], p) for n, p in policy.named_parameters())
    # A saved policy evaluated later (`libero-ll evaluate`): a fresh learner given only the final weights and
    # the eval state of `state_dict()` makes every task's network again, bit for bit.
    fresh_policy = make_policy("resnet_t", {**TINY, "encoder_norm": norm}, META)
    fresh_policy.load_state_dict(policy.state_dict())
    fresh = make_learner("packnet", fresh_policy, TrainConfig(epochs=1, batch_size=4, lr=1e-2), {"finetune_epochs": 1})
    fresh.load_eval_state(learner.state_dict())
    for j in range(3):
        feats, loss = _outputs(fresh_policy, fresh, j, probes[j])
        assert torch.equal(feats, seen[j][0]) and torch.equal(loss, seen[j][1]), f"task {j} differs when reloaded"
    assert not torch.equal(_outputs(fresh_policy, fresh, 2, probes[0])[0], seen[0][0])
    kept = [sum(int((m == t).sum()) for m in learner.owner.values()) for t in (1, 2, 3)]
    total = sum(m.numel() for m in learner.owner.values())
    assert kept[0] == pytest.approx(0.25 * total, rel=0.02)
    assert kept[1] == pytest.approx(0.25 * 0.75 * total, rel=0.03)
    assert learner.params_used(0) < learner.params_used(1) < learner.params_used(2)
    assert learner.memory_bytes() == total


def test_learner_options_are_checked_early():
    policy = make_policy("resnet_t", TINY, META)
    for name, opts, word in [
        ("ewc", {"gamma": 2.0}, "gamma"),
        ("ewc", {"lambda": "big"}, "lambda"),
        ("packnet", {"keep_fraction": 0.0}, "keep_fraction"),
        ("packnet", {"finetune_epochs": -1}, "finetune_epochs"),
        ("packnet", {"prune": 0.5}, "prune"),
        ("er", {"replay_batch_size": -1}, "replay_batch_size"),
        ("mtl", {"epochs": 3}, "epochs"),
        # true passed as 1: PackNet's first task then took every weight and left none for the next.
        ("packnet", {"keep_fraction": True}, "keep_fraction must be in \\(0, 1\\], got True"),
        ("packnet", {"finetune_epochs": True}, "finetune_epochs"),
        ("ewc", {"fisher_batch_size": True}, "fisher_batch_size must be a positive integer or null, got True"),
        ("ewc", {"gamma": True}, "gamma must be in \\[0, 1\\], got True"),
        ("ewc", {"lambda": float("inf")}, "lambda"),
        ("er", {"memory_demos": True}, "memory_demos"),
    ]:
        with pytest.raises(LiberoError, match=word):
            make_learner(name, policy, TrainConfig(), opts)
    # A floor above the start: the "decay" raised the learning rate through every task.
    with pytest.raises(LiberoError, match="train.min_lr \\(0.01\\) is above train.lr \\(0.0001\\)"):
        TrainConfig(lr=1e-4, min_lr=1e-2)


def test_mtl_is_one_stage_of_all_tasks():
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner("mtl", policy, TrainConfig(epochs=1, batch_size=4), {})
    assert learner.stages(3) == [[0, 1, 2]]
    assert make_learner("seql", policy, TrainConfig(), {}).stages(3) == [[0], [1], [2]]
    tasks = [_task(0), _task(1)]
    learner.start_task(0, tasks)
    learner.train_epoch(SequenceDataset(tasks, 4, ["agentview_rgb", "gripper_states"]))
    assert set(learner.samples_by_task) == {0, 1}
    assert learner.memory_bytes() == sum(a.nbytes for t in tasks for d in t.demos for a in d.values())


def test_weight_average_is_evaluated_and_restored_and_survives_a_checkpoint():
    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    cfg = TrainConfig(epochs=1, batch_size=4, lr=1e-2, ema_decay=0.9)
    learner = make_learner("seql", policy, cfg, {})
    data = _task(0)
    ds = SequenceDataset([data], 4, ["agentview_rgb", "gripper_states"])
    start = {n: p.detach().clone() for n, p in policy.named_parameters()}
    learner.start_task(0, data)
    trace = [start]
    for i in range(5):
        learner.observe(ds.get_batch(np.arange(4) + i))
        trace.append({n: p.detach().clone() for n, p in policy.named_parameters()})
    # The average follows the documented recursion, with the warm-up min(decay, (1 + n) / (10 + n)).
    expected = {n: t.clone() for n, t in start.items()}
    for n_step, weights in enumerate(trace[1:], start=1):
        d = min(0.9, (1 + n_step) / (10 + n_step))
        expected = {n: expected[n] * d + weights[n] * (1 - d) for n in expected}
    raw = trace[-1]
    with learner.averaged_weights():
        for n, p in policy.named_parameters():
            assert torch.allclose(p, expected[n], atol=1e-6), n
        assert any(not torch.equal(p, raw[n]) for n, p in policy.named_parameters())
    for n, p in policy.named_parameters():
        assert torch.equal(p, raw[n]), "raw weights restored after the block"
    # A learner restored from the checkpoint holds the same average.
    state = learner.state_dict()
    other = make_learner("seql", policy, cfg, {})
    other.load_state_dict(state, [data])
    with other.averaged_weights():
        for n, p in policy.named_parameters():
            assert torch.allclose(p, expected[n], atol=1e-6), n
    learner.end_average()
    with learner.averaged_weights():
        assert all(torch.equal(p, raw[n]) for n, p in policy.named_parameters())


def test_a_saved_weight_average_goes_where_the_parameters_are():
    """A saved state is read onto the CPU; resumed with the policy on a GPU (here PyTorch's meta device stands
    for one), the average stayed on the CPU and the first step failed mixing devices."""
    policy = make_policy("resnet_t", TINY, META)
    cfg = TrainConfig(epochs=1, batch_size=4, ema_decay=0.9)
    learner = make_learner("er", policy, cfg, {})
    data = _task(0)
    learner.start_task(0, data)
    learner.observe(SequenceDataset([data], 4, ["agentview_rgb", "gripper_states"]).get_batch(np.arange(4)))
    state = learner.state_dict()
    elsewhere = make_policy("resnet_t", TINY, META).to("meta")
    other = make_learner("er", elsewhere, cfg, {})
    other.load_state_dict(state, [data])
    assert {t.device.type for t in other._ema.values()} == {"meta"}
    other._update_average()  # mixed devices raised here
    assert {t.device.type for t in learner._ema.values()} == {"cpu"}  # the saved state itself is left as it was


def test_a_host_batch_goes_to_the_device_before_the_compiled_loss_but_its_task_ids():
    """Host tensors among a compiled function's inputs keep CUDA graphs out (the meta device stands for a GPU)."""
    from libero_ll.learners.base import batch_on_device

    batch = SequenceDataset([_task(0)], 4, ["agentview_rgb", "gripper_states"]).get_batch(np.arange(4))
    moved = batch_on_device(batch, torch.device("meta"))
    assert moved["task_id"] is batch["task_id"]
    placed = {k: v.device.type for k, v in moved.items() if isinstance(v, torch.Tensor) and k != "task_id"}
    placed.update({f"obs.{k}": v.device.type for k, v in moved["obs"].items()})
    assert set(placed.values()) == {"meta"} and "obs.agentview_rgb" in placed and "actions" in placed


def test_weight_average_decay_out_of_range_is_named():
    with pytest.raises(LiberoError, match="ema_decay"):
        TrainConfig(ema_decay=1.0)


def test_the_fused_optimiser_takes_the_steps_of_the_plain_one():
    from libero_ll.learners.base import adamw

    torch.manual_seed(0)
    policy = make_policy("resnet_t", TINY, META)
    learner = make_learner("seql", policy, TrainConfig(epochs=1, batch_size=4, lr=1e-3), {})
    learner.start_task(0, _task(0))
    assert learner.optimizer.defaults["fused"]
    # Both from the same weights and gradients, three steps: the same weights up to rounding.
    params = [torch.randn(5, 3), torch.randn(7)]
    start = [p.clone() for p in params]
    copies = [p.clone() for p in params]
    fused = adamw(params, lr=1e-2, weight_decay=1e-2)
    plain = torch.optim.AdamW(copies, lr=1e-2, weight_decay=1e-2, foreach=False)
    for step in range(3):
        for p, q in zip(params, copies):
            p.grad = torch.full_like(p, float(step + 1)) * torch.arange(p.numel()).view_as(p)
            q.grad = p.grad.clone()
        fused.step()
        plain.step()
    for p, q in zip(params, copies):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
    assert all((p - s).abs().max() > 1e-3 for p, s in zip(params, start))


def test_er_trains_the_same_with_its_data_on_the_device():
    """`train.data_on_device`: the windows and the replay memory gathered on the policy's device (here the
    CPU, through the same tensor path a GPU takes) give the same losses and weights as host arrays."""
    out = []
    for on_device in (False, True):
        torch.manual_seed(0)
        policy = make_policy("resnet_t", TINY, META)
        train = TrainConfig(epochs=1, batch_size=4, lr=1e-3, data_on_device=on_device)
        learner = make_learner("er", policy, train, {"replay_batch_size": 3, "memory_demos": 2})
        losses = []
        for k in range(2):
            data = _task(k)
            ds = train.dataset([data], policy)
            assert ds.device == (torch.device("cpu") if on_device else None)
            learner.start_task(k, data)
            losses.append(learner.train_epoch(ds))
            learner.end_task(k, data)
        assert learner.replay.device == ds.device
        out.append((losses, {n: p.detach().clone() for n, p in policy.named_parameters()}))
    assert out[0][0] == out[1][0]
    assert all(torch.equal(out[0][1][n], out[1][1][n]) for n in out[0][1])
    # Null (auto) keeps a CPU policy's data on the host; a bad value is named.
    assert TrainConfig().dataset([_task(0)], make_policy("resnet_t", TINY, META)).device is None
    with pytest.raises(LiberoError, match="train.data_on_device"):
        TrainConfig(data_on_device="yes")


def _one_step(train: TrainConfig, learner_name: str = "seql", options: dict | None = None):
    """A fresh tiny policy after one observed batch: (loss, policy, the loss the same batch has in float32
    before the step, eagerly)."""
    torch.manual_seed(0)
    policy = make_policy("resnet_t", {**TINY, "dropout": 0.0, "augment_shift": False, "augment_jitter": False}, META)
    learner = make_learner(learner_name, policy, train, options or {})
    data = _task(0)
    learner.start_task(0, data)
    batch = SequenceDataset([data], 4, ["agentview_rgb", "gripper_states"]).get_batch(np.arange(6))
    with torch.no_grad():
        reference = float(policy.compute_loss(batch))
    return float(learner.observe(batch)), policy, reference


def test_bf16_training_loss_is_close_to_float32_and_weights_stay_float32():
    loss, policy, reference = _one_step(TrainConfig(epochs=1, batch_size=6, precision="bf16"))
    # bfloat16 keeps 8 bits of mantissa: the NLL (about -2 to 10 nats here) within a few hundredths.
    assert loss != reference  # the forward really ran in bfloat16
    assert abs(loss - reference) < 0.05 * max(1.0, abs(reference))
    assert all(p.dtype == torch.float32 for p in policy.parameters())
    # EWC trains on the same loss.
    ewc_loss, _, ewc_reference = _one_step(TrainConfig(epochs=1, batch_size=6, precision="bf16"), "ewc", {"lambda": 1.0})
    assert ewc_loss != ewc_reference and abs(ewc_loss - ewc_reference) < 0.05 * max(1.0, abs(ewc_reference))


def test_float32_loss_is_the_eager_loss():
    loss, _, reference = _one_step(TrainConfig(epochs=1, batch_size=6))
    assert loss == pytest.approx(reference, rel=1e-6)


@pytest.mark.slow
def test_compiled_loss_matches_the_eager_one():
    eager = _one_step(TrainConfig(epochs=1, batch_size=6))
    compiled = _one_step(TrainConfig(epochs=1, batch_size=6, compile=True))
    assert compiled[0] == pytest.approx(eager[2], rel=1e-4, abs=1e-4)
    # The step itself: the same update up to the compiled kernels' rounding.
    for a, b in zip(eager[1].parameters(), compiled[1].parameters()):
        assert torch.allclose(a, b, rtol=1e-3, atol=1e-5)


@pytest.mark.slow
def test_a_compiled_loss_takes_a_second_batch_size_with_the_random_shift():
    # An epoch's last, smaller batch made torch.compile recompile with the batch size left symbolic, and the
    # random shift's torch.randint(..., (2, b)) then failed in dynamo: train.compile=true crashed every run.
    torch.manual_seed(0)
    policy = make_policy("resnet_t", {**TINY, "dropout": 0.0, "augment_shift": True, "augment_jitter": False}, META)
    learner = make_learner("seql", policy, TrainConfig(epochs=1, batch_size=6, compile=True), {})
    data = _task(0)
    learner.start_task(0, data)
    dataset = SequenceDataset([data], 4, ["agentview_rgb", "gripper_states"])
    for size in (6, 4, 6):
        assert np.isfinite(float(learner.observe(dataset.get_batch(np.arange(size)))))


TRANSFORMER_KEYS = ("dropout", "extra_embedding_size", "head_size", "heads", "mlp_size", "transformer_layers")


@pytest.mark.parametrize("name, keys", [
    ("resnet_t", {"action_chunk": 3}), ("resnet_t", {}), ("resnet_rnn", {"action_chunk": 2}),
])
def test_a_padded_batch_trains_exactly_as_the_batch_itself(name, keys):
    # An epoch's last batch is padded for compiled training: the padding must change neither the loss nor the
    # step, with chunked targets (next_mask) and grasp weights too.
    data = _task(0)
    dataset = SequenceDataset([data], 4, ["agentview_rgb", "gripper_states"], next_actions=2, grasp_weight=3.0)
    batch = dataset.get_batch(np.array([0, 5, 9, 17]))
    padded = pad_batch(batch, 7)
    assert padded["actions"].shape[0] == 7 and not padded["mask"][4:].any() and not padded["next_mask"][4:].any()
    assert np.array_equal(np.asarray(padded["task_id"][:4]), np.asarray(batch["task_id"]))
    results = []
    for b in (batch, padded):
        torch.manual_seed(0)
        base = TINY if name == "resnet_t" else {k: v for k, v in TINY.items() if k not in TRANSFORMER_KEYS}
        policy = make_policy(name, {**base, **keys, "augment_shift": False, "augment_jitter": False,
                                    "lowdim_noise": 0.0, **({"dropout": 0.0} if name == "resnet_t" else {})}, META)
        learner = make_learner("seql", policy, TrainConfig(epochs=1, batch_size=4), {})
        learner.start_task(0, data)
        results.append((float(learner.observe(b)), [p.detach().clone() for p in policy.parameters()]))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-5)
    for a, b in zip(results[0][1], results[1][1]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)
    assert pad_batch(batch, 4) is batch


def _compiled_batch_sizes(monkeypatch, policy_keys: dict, train: TrainConfig, sizes=(6, 4, 6, 3)) -> list[int]:
    """The batch sizes a compiled loss is called with when a learner observes batches of `sizes` windows
    (torch.compile replaced by a recorder of its calls)."""
    seen = []

    def fake_compile(fn, **kwargs):
        def compiled(batch):
            seen.append(int(batch["actions"].shape[0]))
            return fn(batch)
        return compiled

    monkeypatch.setattr(torch, "compile", fake_compile)
    torch.manual_seed(0)
    policy = make_policy("resnet_t", {**TINY, **policy_keys}, META)
    learner = make_learner("seql", policy, train, {})
    data = _task(0)
    learner.start_task(0, data)
    dataset = SequenceDataset([data], 4, ["agentview_rgb", "gripper_states"])
    for size in sizes:
        assert np.isfinite(float(learner.observe(dataset.get_batch(np.arange(size)))))
    return seen


def test_compiled_training_pads_an_epochs_last_batch_to_the_full_size(monkeypatch):
    # Each new batch size compiled the loss again (about a minute on a GPU for the paper's network), once per
    # stage for its last batch: padded, the compiled loss sees one size.
    assert _compiled_batch_sizes(monkeypatch, {}, TrainConfig(epochs=1, batch_size=6, compile=True)) == [6, 6, 6, 6]
    # Batch norm mixes a batch's windows: no padding there.
    assert _compiled_batch_sizes(monkeypatch, {"encoder_norm": "batch"},
                                 TrainConfig(epochs=1, batch_size=6, compile=True)) == [6, 4, 6, 3]


def test_auto_precision_and_compile_are_float32_and_eager_on_a_cpu(monkeypatch):
    train = TrainConfig(epochs=1, batch_size=6, precision=None, compile=None)
    assert (train.precision_on(torch.device("cpu")), train.compile_on(torch.device("cpu"))) == ("fp32", False)
    assert (train.precision_on(torch.device("cuda")), train.compile_on(torch.device("cuda"))) == ("bf16", "reduce-overhead")
    assert _compiled_batch_sizes(monkeypatch, {}, train) == []
    loss, _, reference = _one_step(train)
    assert loss == pytest.approx(reference, rel=1e-6)


def test_auto_compile_falls_back_to_eager_when_compiling_fails(monkeypatch):
    import torch._dynamo.exc as dynamo_exc

    def failing_compile(fn, **kwargs):
        def compiled(batch):
            raise dynamo_exc.InternalTorchDynamoError("no C compiler found")
        return compiled

    monkeypatch.setattr(torch, "compile", failing_compile)
    monkeypatch.setattr(TrainConfig, "compile_on", lambda self, device: "reduce-overhead" if self.compile is None else self.compile)
    with pytest.warns(UserWarning, match="train.compile .auto.: compiling the training loss failed.*no C compiler"):
        loss, _, reference = _one_step(TrainConfig(epochs=1, batch_size=6, compile=None))
    assert loss == pytest.approx(reference, rel=1e-6)
    # Asked for by name, a failure to compile stops the run.
    with pytest.raises(dynamo_exc.InternalTorchDynamoError):
        _one_step(TrainConfig(epochs=1, batch_size=6, compile="reduce-overhead"))


@pytest.mark.parametrize("key, value", [("precision", "fp16"), ("compile", "fastest"), ("compile", 1)])
def test_precision_and_compile_values_are_checked(key, value):
    with pytest.raises(LiberoError, match=f"train.{key}"):
        TrainConfig(**{key: value})
