"""Sequence dataset: window count, padding and mask, dtypes, and agreement with a plain per-window cut."""

import numpy as np
import pytest
import torch

from libero_ll.data.dataset import SequenceDataset, TaskData, host_to_device, load_task_data
from libero_ll.data.hdf5 import Demo, DemoWriter
from libero_ll.errors import LiberoError

KEYS = ("agentview_rgb", "joint_states")


def demo_dict(T, base):
    """A demo whose every value encodes its step, so windows can be checked by value."""
    steps = base + np.arange(T)
    return {
        "agentview_rgb": np.broadcast_to(steps[:, None, None, None] % 256, (T, 4, 4, 3)).astype(np.uint8),
        "joint_states": np.repeat(steps[:, None], 7, axis=1).astype(np.float64),
        "actions": np.repeat(steps[:, None], 7, axis=1).astype(np.float64) / 100,
    }


def two_tasks():
    return [
        TaskData(task_id=3, demos=[demo_dict(3, 0), demo_dict(5, 10)], task_emb=np.full(4, 0.5)),
        TaskData(task_id=7, demos=[demo_dict(2, 20)], task_emb=np.full(4, -1.0)),
    ]


def test_one_window_per_step_with_its_origin():
    ds = SequenceDataset(two_tasks(), seq_len=4, obs_keys=KEYS)
    assert len(ds) == ds.num_steps() == 3 + 5 + 2
    index = ds.window_index()
    assert index.shape == (10, 3)
    np.testing.assert_array_equal(index[:4], [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 1, 0]])
    np.testing.assert_array_equal(index[-2:], [[1, 0, 0], [1, 0, 1]])


def test_window_past_the_end_repeats_last_step_with_mask_false():
    ds = SequenceDataset(two_tasks(), seq_len=4, obs_keys=KEYS)
    batch = ds.get_batch(np.array([1, 9]))  # task 3 demo 0 from step 1; task 7 demo 0 from step 1
    expected_steps = [[1, 2, 2, 2], [21, 21, 21, 21]]
    np.testing.assert_array_equal(batch["obs"]["joint_states"][:, :, 0].numpy(), expected_steps)
    np.testing.assert_array_equal(batch["obs"]["agentview_rgb"][:, :, 0, 0, 0].numpy(), expected_steps)
    expected_mask = [[True, True, False, False], [True, False, False, False]]
    np.testing.assert_array_equal(batch["mask"].numpy(), expected_mask)
    np.testing.assert_array_equal(batch["task_id"].numpy(), [3, 7])
    np.testing.assert_array_equal(batch["task_emb"].numpy(), [[0.5] * 4, [-1.0] * 4])


def test_batch_shapes_and_dtypes():
    ds = SequenceDataset(two_tasks(), seq_len=3, obs_keys=KEYS)
    batch = ds.get_batch([0, 4, 5])
    assert batch["obs"]["agentview_rgb"].shape == (3, 3, 4, 4, 3)
    assert batch["obs"]["agentview_rgb"].dtype == torch.uint8
    assert batch["obs"]["joint_states"].shape == (3, 3, 7)
    assert batch["obs"]["joint_states"].dtype == torch.float32
    assert batch["actions"].shape == (3, 3, 7) and batch["actions"].dtype == torch.float32
    assert batch["mask"].dtype == torch.bool
    assert batch["task_emb"].shape == (3, 4) and batch["task_emb"].dtype == torch.float32
    assert batch["task_id"].dtype == torch.int64


def test_batches_match_a_plain_cut_of_each_window():
    tasks = two_tasks()
    L = 4
    ds = SequenceDataset(tasks, seq_len=L, obs_keys=KEYS)
    idx = np.random.default_rng(0).integers(0, len(ds), 32)
    batch = ds.get_batch(idx)
    for b, w in enumerate(idx):
        task_pos, d, t = ds.window_index()[w]
        demo = tasks[task_pos].demos[d]
        T = len(demo["actions"])
        steps = [min(t + i, T - 1) for i in range(L)]
        np.testing.assert_allclose(batch["actions"][b].numpy(), demo["actions"][steps], rtol=1e-6)
        np.testing.assert_array_equal(batch["obs"]["agentview_rgb"][b].numpy(), demo["agentview_rgb"][steps])
        np.testing.assert_array_equal(batch["mask"][b].numpy(), [t + i < T for i in range(L)])


def test_nbytes_counts_the_held_arrays():
    ds = SequenceDataset(two_tasks(), seq_len=2, obs_keys=KEYS)
    data_bytes = 10 * (4 * 4 * 3) + 10 * 7 * 4 + 10 * 7 * 4  # uint8 images, float32 joints and actions
    assert data_bytes <= ds.nbytes() < data_bytes + 10_000


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="seq_len"):
        SequenceDataset(two_tasks(), seq_len=0, obs_keys=KEYS)
    tasks = two_tasks()
    tasks[1].task_emb = np.zeros(5)
    with pytest.raises(ValueError, match="embeddings"):
        SequenceDataset(tasks, seq_len=2, obs_keys=KEYS)
    with pytest.raises(ValueError, match="ee_states"):
        SequenceDataset(two_tasks(), seq_len=2, obs_keys=("ee_states",))


def test_load_task_data_from_a_demo_file(tmp_path):
    path = tmp_path / "task.hdf5"
    rng = np.random.default_rng(0)
    with DemoWriter(path, env_name="E", problem_info={}, bddl_file_name="t.bddl", bddl_file_content="",
                    env_args={}, generator="test") as w:
        for T in (4, 6):
            obs = {
                "agentview_rgb": rng.integers(0, 256, (T, 4, 4, 3), dtype=np.uint8),
                "joint_states": rng.normal(size=(T, 7)),
            }
            demo = Demo(actions=rng.normal(size=(T, 7)), states=np.zeros((T, 3)),
                        robot_states=np.zeros((T, 9)), obs=obs, init_state=np.zeros(3))
            w.add(demo)
    task = load_task_data(path, task_id=2, task_emb=np.ones(8), obs_keys=KEYS, max_demos=1)
    assert task.task_id == 2 and task.task_emb.dtype == np.float32 and len(task.demos) == 1
    assert set(task.demos[0]) == {"agentview_rgb", "joint_states", "actions"}
    assert task.num_steps() == 4
    ds = SequenceDataset([task], seq_len=10, obs_keys=KEYS)
    assert len(ds) == 4 and ds.get_batch([0])["mask"].sum() == 4


def _two_demos(path, edit) -> None:
    """A demo file of two 5-step demos (a picture, joints, actions); `edit(actions, obs)` changes the second's."""
    rng = np.random.default_rng(0)
    with DemoWriter(path, env_name="E", problem_info={}, bddl_file_name="t.bddl", bddl_file_content="",
                    env_args={}, generator="test") as w:
        for number in range(2):
            obs = {"agentview_rgb": rng.integers(0, 256, (5, 4, 4, 3), dtype=np.uint8),
                   "joint_states": rng.normal(size=(5, 7))}
            actions = rng.normal(size=(5, 7))
            if number == 1:
                actions, obs = edit(actions, obs)
            w.add(Demo(actions=actions, states=np.zeros((5, 3)), robot_states=np.zeros((5, 9)), obs=obs,
                       init_state=np.zeros(3)))


@pytest.mark.parametrize("key", ["actions", "joint_states"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_demo_with_nan_or_infinity_is_refused_with_its_place(tmp_path, key, bad):
    path = tmp_path / "task.hdf5"

    def poison(actions, obs):
        (actions if key == "actions" else obs["joint_states"])[3, 2] = bad
        return actions, obs

    _two_demos(path, poison)
    with pytest.raises(LiberoError, match=rf"demo 1 .* NaN or infinite '{key}' at step 3"):
        load_task_data(path, task_id=0, task_emb=np.ones(4), obs_keys=KEYS)
    assert len(load_task_data(path, task_id=0, task_emb=np.ones(4), obs_keys=KEYS, max_demos=1).demos) == 1


@pytest.mark.parametrize("key, width", [("actions", 6), ("joint_states", 9)])
def test_a_demo_of_another_width_is_refused_with_its_place(tmp_path, key, width):
    # Six-wide actions from another tool's dataset trained into a broadcasting error deep in the policy.
    path = tmp_path / "task.hdf5"

    def widen(actions, obs):
        if key == "actions":
            return np.zeros((5, width)), obs
        return actions, {**obs, "joint_states": np.zeros((5, width))}

    _two_demos(path, widen)
    with pytest.raises(LiberoError, match=rf"demo 1 .* has '{key}' of shape \(5, {width}\), where the policies "
                                          r"read \(5, 7\)"):
        load_task_data(path, task_id=0, task_emb=np.ones(4), obs_keys=KEYS)


def gripper_demo(T, closes, opens=()):
    """A demo whose gripper command closes at the steps in `closes` and opens at those in `opens`."""
    d = demo_dict(T, 0)
    grip = np.full(T, -1.0)
    for t in sorted([(t, 1.0) for t in closes] + [(t, -1.0) for t in opens]):
        grip[t[0]:] = t[1]
    d["actions"] = d["actions"].copy()
    d["actions"][:, -1] = grip
    return d


def test_grasp_weight_covers_the_steps_before_every_closing_of_the_fingers():
    from libero_ll.data.dataset import GRASP_AFTER, grasp_weights

    # Demo 0 closes at step 6, opens at 12 and closes again at 16; demo 1 starts closed.
    demos = [gripper_demo(20, closes=[6, 16], opens=[12]), gripper_demo(8, closes=[0])]
    task = TaskData(task_id=0, demos=demos, task_emb=np.zeros(4))
    ds = SequenceDataset([task], seq_len=3, obs_keys=KEYS, grasp_weight=3.0, grasp_steps=4)
    expected = np.ones(28, dtype=np.float32)
    expected[2:6 + GRASP_AFTER] = 3.0
    expected[12:16 + GRASP_AFTER] = 3.0
    expected[20:20 + GRASP_AFTER] = 3.0
    weights = grasp_weights(np.concatenate([d["actions"] for d in demos]), [20, 8], 3.0, 4)
    np.testing.assert_array_equal(weights, expected)
    # Batches carry the weight of each of their steps; a padded step repeats the demo's last one.
    batch = ds.get_batch([1, 5, 19])
    np.testing.assert_array_equal(batch["weight"].numpy(), [expected[1:4], expected[5:8], [1.0, 1.0, 1.0]])
    # Without a grasp weight, batches carry none.
    assert "weight" not in SequenceDataset([task], seq_len=3, obs_keys=KEYS).get_batch([1])


def test_gripper_lead_moves_every_closing_and_opening_earlier_within_each_demo():
    # Demo 0 closes at step 6, opens at 12 and closes again at 16; demo 1 (1 step) starts closed.
    demos = [gripper_demo(20, closes=[6, 16], opens=[12]), gripper_demo(1, closes=[0]), gripper_demo(5, closes=[3])]
    task = TaskData(task_id=0, demos=demos, task_emb=np.zeros(4))
    kept = [d["actions"].copy() for d in demos]
    ds = SequenceDataset([task], seq_len=3, obs_keys=KEYS, next_actions=2, gripper_lead=2)
    grip = ds.get_batch(np.arange(len(ds)))["actions"][:, 0, -1].numpy()
    expected = np.r_[np.where((np.arange(20) >= 4) & (np.arange(20) < 10) | (np.arange(20) >= 14), 1.0, -1.0),
                     [1.0], [-1.0, 1.0, 1.0, 1.0, 1.0]]
    np.testing.assert_array_equal(grip, expected)
    # Only the fingers' command moves, and the demos themselves are left as they were.
    np.testing.assert_array_equal(ds.get_batch([7])["actions"][0, :, :-1].numpy(), kept[0][7:10, :-1].astype(np.float32))
    for d, before in zip(demos, kept):
        np.testing.assert_array_equal(d["actions"], before)
    # The chunk targets past a window are the led ones too; the last steps repeat the demo's last command.
    batch = ds.get_batch([17, 21])
    np.testing.assert_array_equal(batch["next_actions"][:, :, -1].numpy(), [[1.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(batch["actions"][1, :, -1].numpy(), [-1.0, 1.0, 1.0])
    # Without a lead the commands are the demos'.
    plain = SequenceDataset([task], seq_len=3, obs_keys=KEYS).get_batch(np.arange(26))["actions"][:, 0, -1]
    np.testing.assert_array_equal(plain.numpy(), np.concatenate([d[:, -1] for d in kept]).astype(np.float32))
    with pytest.raises(ValueError, match="gripper_lead must be at least 0"):
        SequenceDataset([task], seq_len=3, obs_keys=KEYS, gripper_lead=-1)


def test_bad_grasp_settings_are_named():
    from libero_ll.errors import LiberoError
    from libero_ll.learners.base import TrainConfig

    for bad in (0, -1.0, float("inf"), "3", True):
        with pytest.raises(LiberoError, match="train.grasp_weight must be a positive number"):
            TrainConfig(grasp_weight=bad)
    for bad in (-1, 2.5, None):
        with pytest.raises(LiberoError, match="train.grasp_steps must be a non-negative integer"):
            TrainConfig(grasp_steps=bad)
    TrainConfig(grasp_weight=3, grasp_steps=0)
    for bad in (-1, 1.5, None, True):
        with pytest.raises(LiberoError, match="train.gripper_lead must be a non-negative integer"):
            TrainConfig(gripper_lead=bad)


def test_batches_gathered_on_a_device_equal_the_hosts():
    """`device`: the data held as tensors and gathered there (a GPU's batches never cross the bus); on the
    CPU device the same code path, so its batches must equal the host's, padded steps and weights included."""
    tasks = two_tasks()  # the last action dimension turns positive at the first demo's step 1: a closing
    keys = KEYS
    host = SequenceDataset(tasks, seq_len=4, obs_keys=keys, grasp_weight=3.0, grasp_steps=1, next_actions=2)
    dev = SequenceDataset(tasks, seq_len=4, obs_keys=keys, grasp_weight=3.0, grasp_steps=1, device="cpu",
                          next_actions=2)
    assert host.device is None and dev.device == torch.device("cpu") and len(dev) == len(host)
    idx = np.array([9, 0, 4, 7, 7, 2])
    a, b = host.get_batch(idx), dev.get_batch(idx)
    assert set(a) == set(b) == {"obs", "actions", "mask", "task_emb", "task_id", "weight", "next_actions", "next_mask"}
    for key in keys:
        assert b["obs"][key].dtype == a["obs"][key].dtype and torch.equal(a["obs"][key], b["obs"][key])
    for key in ("actions", "mask", "task_emb", "task_id", "weight", "next_actions", "next_mask"):
        assert b[key].dtype == a[key].dtype and torch.equal(a[key], b[key]), key
    assert not bool(b["mask"].all()) and float(b["weight"].max()) == 3.0
    assert dev.nbytes() == host.nbytes()
    with pytest.raises(ValueError, match="already on cpu"):
        dev.to_device("cpu")


def test_next_actions_follow_the_window_and_are_masked_past_the_demo():
    """`next_actions`: the actions after each window (a chunked policy's targets past it), False past the end."""
    ds = SequenceDataset(two_tasks(), seq_len=2, obs_keys=KEYS, next_actions=3)
    # Windows 3 and 5 start at steps 0 and 2 of the 5-step demo (base 10); window 8 at step 0 of a 2-step one.
    batch = ds.get_batch([3, 5, 8])
    assert batch["next_actions"].shape == (3, 3, 7) and batch["next_actions"].dtype == torch.float32
    np.testing.assert_allclose(batch["next_actions"][:, :, 0].numpy() * 100, [[12, 13, 14], [14, 14, 14], [21, 21, 21]],
                               rtol=1e-6)
    np.testing.assert_array_equal(batch["next_mask"].numpy(), [[True, True, True], [True, False, False],
                                                               [False, False, False]])
    assert "next_actions" not in SequenceDataset(two_tasks(), seq_len=2, obs_keys=KEYS).get_batch([3])
    with pytest.raises(ValueError, match="next_actions must be at least 0"):
        SequenceDataset(two_tasks(), seq_len=2, obs_keys=KEYS, next_actions=-1)


class _CopyProbe:
    """Stands in for a host tensor: records how `host_to_device` moves it (no GPU needed)."""

    device = torch.device("cpu")

    def __init__(self):
        self.calls = []

    def pin_memory(self):
        self.calls.append("pin")
        return self

    def to(self, device, non_blocking=False):
        self.calls.append(("to", str(device), non_blocking))
        return self


def test_host_to_device_pins_for_a_gpu_except_inside_a_compiled_step(monkeypatch):
    # Eager, to a GPU: through pinned memory, without waiting.
    probe = _CopyProbe()
    host_to_device(probe, "cuda")
    assert probe.calls == ["pin", ("to", "cuda", True)]
    # To the CPU: a plain copy.
    probe = _CopyProbe()
    host_to_device(probe, "cpu")
    assert probe.calls == [("to", "cpu", False)]
    # Traced by torch.compile (train.compile), which cannot trace pinning: a plain copy. Without this, a
    # compiled training step on a GPU stopped in dynamo at the pinning.
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    probe = _CopyProbe()
    host_to_device(probe, "cuda")
    assert probe.calls == [("to", "cuda", False)]
