"""Teleoperation: the loop, driven by a scripted device, writes the expert's layout; discarded episodes are
not written; quit and Ctrl-C keep what was kept; the keyboard adapter maps keys through robosuite; and
without pynput or a display the command fails with a clear error."""

from __future__ import annotations

import enum
import importlib.machinery
import os
import signal
import sys
import types

import h5py
import numpy as np
import pytest

from libero_ll.data.hdf5 import read_demos, read_info
from libero_ll.data.teleop import (
    CONTINUE,
    DISCARDED,
    QUIT,
    RESET,
    TIMEOUT,
    episode_seed,
    run_teleop_episode,
    teleop_session,
)

SEED = 3
TASK = "put_the_black_bowl_on_the_plate"


def _config():
    from libero_ll.envs.env import EnvConfig

    return EnvConfig(image_size=32, robot_mesh="collision")


@pytest.fixture(scope="module")
def env(bowl_task):
    from libero_ll.envs.env import LiberoEnv

    e = LiberoEnv(bowl_task, _config())
    yield e
    e.close()


@pytest.fixture(scope="module")
def expert_file(bowl_task, tmp_path_factory):
    """One scripted-expert demo (episode 0's seed), written by `collect`."""
    from libero_ll.data.collect import collect_task

    path = tmp_path_factory.mktemp("expert") / "expert.hdf5"
    stats = collect_task(bowl_task, path, 1, seed=SEED, env_config=_config())
    assert stats.kept == 1
    return path


@pytest.fixture(scope="module")
def expert_actions(env, expert_file):
    """Expert actions for episodes 0 and 2 of a session with seed SEED."""
    from libero_ll.data.collect import run_expert_episode

    ok, rec = run_expert_episode(env, episode_seed(TASK, 2, SEED), 400, record=True)
    assert ok
    return {0: read_demos(expert_file)[0].actions, 2: np.stack(rec["actions"])}


class ScriptedDevice:
    """Plays one list of ticks per episode; a tick is (action or None, command), or an exception to raise."""

    name = "scripted"

    def __init__(self, episodes):
        self.episodes = list(episodes)
        self.ticks = None

    def start_episode(self, env):
        self.ticks = iter(self.episodes.pop(0))

    def get_action(self, env):
        tick = next(self.ticks)
        if isinstance(tick, BaseException) or callable(tick):
            if callable(tick):
                return tick()
            raise tick
        return tick

    def close(self):
        pass


def replay(actions, idle=3):
    """A person who waits a few ticks, then does what the expert did."""
    return [(None, CONTINUE)] * idle + [(a, CONTINUE) for a in actions]


def partial(actions, n, end):
    return [(a, CONTINUE) for a in actions[:n]] + [end]


def layout(path):
    """Every dataset's path, dtype and per-step shape, and the attribute names of each demo group."""
    out = {}
    with h5py.File(path) as f:
        def visit(name, obj):
            key = name.replace("demo_1", "demo_0")
            if isinstance(obj, h5py.Dataset):
                out.setdefault(key, (str(obj.dtype), obj.shape[1:]))
            elif name != "data":
                out.setdefault(key + "/@", sorted(obj.attrs))

        f.visititems(visit)
        data_attrs = set(f["data"].attrs)
    return out, data_attrs


def test_session_writes_the_expert_layout_and_skips_reset_episodes(env, bowl_task, tmp_path, expert_file,
                                                                   expert_actions):
    out = tmp_path / "teleop.hdf5"
    device = ScriptedDevice([
        replay(expert_actions[0]),
        partial(expert_actions[0], 15, (None, RESET)),
        replay(expert_actions[2], idle=0),
    ])
    stats = teleop_session(bowl_task, out, device, 2, seed=SEED, env=env)
    assert (stats.kept, stats.discarded, stats.episodes, stats.ended_by) == (2, 1, 3, "done")
    assert stats.path == out

    info, ref = read_info(out), read_info(expert_file)
    assert info.generator == "teleoperation scripted"
    assert (info.num_demos, info.total) == (2, sum(stats.lengths))
    for key in ("env_name", "problem_info", "bddl_file_content", "env_args", "image_convention"):
        assert getattr(info, key) == getattr(ref, key), key
    (ours, our_attrs), (theirs, their_attrs) = layout(out), layout(expert_file)
    assert ours == theirs
    # The collector may add statistics of its own (expert success rate, ...); every other attribute of
    # data/ is the same.
    assert our_attrs <= their_attrs and {"num_demos", "total", "generator", "env_args"} <= our_attrs

    demos, expert = read_demos(out), read_demos(expert_file)[0]
    assert [d.seed for d in demos] == [episode_seed(TASK, 0, SEED), episode_seed(TASK, 2, SEED)]
    # The idle ticks before the first action are not recorded: replaying the expert's actions from the
    # same reset gives the expert's demo back (the expert stepped with the float64 actions that the file
    # stores as float32, hence the tolerance).
    d = demos[0]
    np.testing.assert_allclose(d.actions, expert.actions)
    np.testing.assert_allclose(d.states, expert.states, atol=1e-5)
    np.testing.assert_allclose(d.init_state, expert.init_state, atol=1e-8)
    for key in expert.obs:
        assert d.obs[key].shape == expert.obs[key].shape and d.obs[key].dtype == expert.obs[key].dtype
    diff = d.obs["agentview_rgb"].astype(int) - expert.obs["agentview_rgb"]
    assert np.abs(diff).mean() < 0.5
    assert d.model_file == expert.model_file
    # A teleoperated demo replays: its actions from its init_state give its states, and the goal at the end.
    env.reset_to(d.init_state)
    for state, action in zip(d.states, d.actions):
        np.testing.assert_allclose(env.get_state(), state, rtol=0, atol=1e-9)
        env.step(action)
    assert env.check_goal()
    assert len(demos[1].actions) == len(expert_actions[2])


@pytest.mark.parametrize("how", ["quit key", "KeyboardInterrupt", "SIGINT", "SIGTERM"])
def test_quit_and_ctrl_c_keep_the_demos_already_kept(env, bowl_task, tmp_path, expert_actions, how):
    def sending(sig):
        def tick():
            os.kill(os.getpid(), sig)  # the handler only asks the loop to stop
            return np.zeros(7), CONTINUE
        return tick

    end = {"quit key": (None, QUIT), "KeyboardInterrupt": KeyboardInterrupt(), "SIGINT": sending(signal.SIGINT),
           "SIGTERM": sending(signal.SIGTERM)}[how]
    handler = signal.getsignal(signal.SIGINT)
    out = tmp_path / "teleop.hdf5"
    device = ScriptedDevice([replay(expert_actions[0], idle=0), partial(expert_actions[2], 10, end)])
    stats = teleop_session(bowl_task, out, device, 5, seed=SEED, env=env)
    assert stats.kept == 1 and stats.episodes == 2
    assert stats.ended_by == {"quit key": "quit", "SIGTERM": "terminated"}.get(how, "interrupted")
    assert [d.seed for d in read_demos(out)] == [episode_seed(TASK, 0, SEED)]
    assert read_info(out).num_demos == 1
    assert signal.getsignal(signal.SIGINT) is handler
    assert sorted(p.name for p in tmp_path.iterdir()) == ["teleop.hdf5"]  # no temporary file left


def test_a_ctrl_c_while_the_file_is_written_waits_for_it(env, bowl_task, tmp_path, expert_actions, monkeypatch):
    from libero_ll.data.hdf5 import DemoWriter

    close = DemoWriter.close

    def interrupted_close(self):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C (after the first, or alone) while the file is written
        close(self)

    monkeypatch.setattr(DemoWriter, "close", interrupted_close)
    out = tmp_path / "teleop.hdf5"
    device = ScriptedDevice([replay(expert_actions[0], idle=0), [(None, QUIT)]])
    stats = teleop_session(bowl_task, out, device, 5, seed=SEED, env=env)
    assert stats.kept == 1 and stats.path == out and read_info(out).num_demos == 1
    assert stats.ended_by == "interrupted"  # the Ctrl-C is said, not dropped


def test_an_error_after_a_kept_demo_says_where_it_is(env, bowl_task, tmp_path, expert_actions):
    from libero_ll.errors import LiberoError

    out = tmp_path / "teleop.hdf5"
    device = ScriptedDevice([replay(expert_actions[0], idle=0), [LiberoError("the simulator is unstable")]])
    with pytest.raises(LiberoError, match=f"the simulator is unstable; the 1 demo kept before it is written to "
                                          f"{out}"):
        teleop_session(bowl_task, out, device, 5, seed=SEED, env=env)
    assert read_info(out).num_demos == 1


def test_append_keeps_the_earlier_demos_in_front(env, bowl_task, tmp_path, expert_actions):
    from libero_ll.envs.env import EnvConfig
    from libero_ll.errors import LiberoError

    out = tmp_path / "teleop.hdf5"
    teleop_session(bowl_task, out, ScriptedDevice([replay(expert_actions[0])]), 1, seed=SEED, env=env)
    first = read_demos(out)[0]
    # The second session goes on from episode 1's reset: discarded, then episode 2's, kept.
    device = ScriptedDevice([partial(expert_actions[0], 5, (None, RESET)), replay(expert_actions[2])])
    stats = teleop_session(bowl_task, out, device, 1, seed=SEED, env=env, env_config=_config(), append=True)
    assert (stats.kept, stats.earlier, stats.path) == (1, 1, out)
    demos = read_demos(out)
    assert [d.seed for d in demos] == [episode_seed(TASK, 0, SEED), episode_seed(TASK, 2, SEED)]
    np.testing.assert_array_equal(demos[0].actions, first.actions)
    np.testing.assert_array_equal(demos[0].obs["agentview_rgb"], first.obs["agentview_rgb"])
    assert read_info(out).num_demos == 2
    with pytest.raises(LiberoError, match="recorded with image_size 32, not 48; append with --image-size 32"):
        teleop_session(bowl_task, out, ScriptedDevice([]), 1, env=env,
                       env_config=EnvConfig(image_size=48, robot_mesh="collision"), append=True)
    soup = bowl_task.parent / "put_the_alphabet_soup_in_the_basket.bddl"
    with pytest.raises(LiberoError, match="its demos are of another task \\(Put the black bowl on the plate\\), "
                                          "not put_the_alphabet_soup_in_the_basket"):
        teleop_session(soup, out, ScriptedDevice([]), 1, env=env, env_config=_config(), append=True)
    assert read_info(out).num_demos == 2


def test_nothing_kept_writes_nothing_and_leaves_an_existing_file(env, bowl_task, tmp_path, expert_actions):
    out = tmp_path / "old.hdf5"
    out.write_bytes(b"an earlier session")
    a = expert_actions[0]
    device = ScriptedDevice([partial(a, 5, (None, RESET)), partial(a, 5, (None, QUIT))])
    stats = teleop_session(bowl_task, out, device, 1, env=env)
    assert (stats.kept, stats.discarded, stats.path) == (0, 1, None)
    assert out.read_bytes() == b"an earlier session"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.hdf5"]


def test_episode_records_only_stepped_ticks_and_stops_at_the_cap(env):
    device = ScriptedDevice([[(None, CONTINUE)] * 4 + [(np.zeros(7), CONTINUE)] * 10])
    outcome, rec = run_teleop_episode(env, device, seed=0, max_steps=6)
    assert outcome == TIMEOUT and env.steps == 6
    assert len(rec["actions"]) == len(rec["obs"]) == len(rec["states"]) == 6

    device = ScriptedDevice([[(np.zeros(7), CONTINUE)] * 2 + [(None, RESET)]])
    outcome, rec = run_teleop_episode(env, device, seed=0, max_steps=100)
    assert outcome == DISCARDED and len(rec["actions"]) == 2


# ---------------------------------------------------------------------------------- keyboard adapter


class FakeKey(enum.Enum):
    up = "up"
    down = "down"
    left = "left"
    right = "right"
    space = "space"
    esc = "esc"


class FakeKeyCode:
    def __init__(self, char):
        self.char = char


class FakeListener:
    def __init__(self, on_press=None, on_release=None):
        self.on_press, self.on_release = on_press, on_release
        self.running = False

    def start(self):
        self.running = True

    def stop(self):
        self.running = False


@pytest.fixture
def fake_pynput(monkeypatch):
    """pynput without a window system: robosuite's real Keyboard, fed key events by the test."""
    prefixes = ("pynput", "robosuite.devices")
    ours = [k for k in sys.modules if k.split(".")[0] == "pynput" or k.startswith(prefixes)]
    saved = {k: sys.modules.pop(k) for k in ours}
    kb = types.ModuleType("pynput.keyboard")
    kb.Key, kb.KeyCode, kb.Listener, kb.Controller = FakeKey, FakeKeyCode, FakeListener, object
    pkg = types.ModuleType("pynput")
    pkg.__spec__ = importlib.machinery.ModuleSpec("pynput", None, is_package=True)
    pkg.__path__ = []
    pkg.keyboard = kb
    sys.modules.update({"pynput": pkg, "pynput.keyboard": kb})
    monkeypatch.setenv("DISPLAY", ":fake")
    yield
    for k in [k for k in sys.modules if k.split(".")[0] == "pynput" or k.startswith(prefixes)]:
        del sys.modules[k]
    sys.modules.update(saved)


def test_keyboard_adapter_maps_keys_through_robosuite(env, fake_pynput):
    from libero_ll.data.teleop import KeyboardDevice

    device = KeyboardDevice(pos_scale=0.4, rot_scale=0.5)
    env.reset(seed=0)
    device.start_episode(env)
    kb = device._kb
    kb.on_press(FakeKeyCode("a"))
    assert device.get_action(env) == (None, CONTINUE)  # no motion or gripper key yet: no step

    start = env.robot_proprio()["ee_pos"]
    for _ in range(8):
        kb.on_press(FakeKey.up)
        kb.on_press(FakeKey.left)
        action, command = device.get_action(env)
        assert command == CONTINUE
        np.testing.assert_allclose(action, [-0.4, -0.4, 0, 0, 0, 0, -1])
        env.step(action)
    moved = env.robot_proprio()["ee_pos"] - start
    assert moved[0] < -0.02 and moved[1] < -0.02 and abs(moved[2]) < 0.01  # away from the camera, to its left

    kb.on_press(FakeKeyCode(";"))
    action, _ = device.get_action(env)
    assert action[2] == pytest.approx(0.4)
    kb.on_press(FakeKeyCode("e"))
    action, _ = device.get_action(env)
    assert np.abs(action[3:6]).max() == pytest.approx(0.5) and not action[:3].any()
    kb.on_release(FakeKey.space)
    action, _ = device.get_action(env)
    assert action[6] == 1  # gripper closed
    np.testing.assert_allclose(device.get_action(env)[0][:6], 0)  # no key since: hold still

    kb.on_release(FakeKeyCode("q"))
    assert device.get_action(env) == (None, RESET)
    device.start_episode(env)
    assert device.get_action(env) == (None, CONTINUE)
    kb.on_release(FakeKey.esc)
    assert device.get_action(env) == (None, QUIT)
    device.close()
    assert not kb.listener.running


# ------------------------------------------------------------------------------------ command line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="display detection differs off Linux")
def test_command_says_what_is_missing(bowl_task, tmp_path, monkeypatch, capsys):
    from libero_ll.cli import main

    out = tmp_path / "demos.hdf5"
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["teleop", str(bowl_task), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "display" in err and "Traceback" not in err

    monkeypatch.setitem(sys.modules, "pynput", None)
    assert main(["teleop", str(bowl_task), "--out", str(out)]) == 2
    assert "pip install 'libero_ll[teleop]'" in capsys.readouterr().err

    out.write_bytes(b"kept")
    assert main(["teleop", str(bowl_task), "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err and out.read_bytes() == b"kept"
    assert not list(tmp_path.glob(".*tmp"))
