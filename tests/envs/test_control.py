"""The lean controller: it moves the hand as robosuite's controller does, replays exactly, and the images follow."""

from __future__ import annotations

import numpy as np
import pytest

from libero_ll.errors import LiberoError


@pytest.fixture(scope="module")
def robosuite_env(soup_env):
    """The scene of the session's `soup_env` (lean controller) under robosuite's controller."""
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(soup_env.spec.path, EnvConfig(render=False, controller="robosuite"))
    yield env
    env.close()


def _actions() -> np.ndarray:
    """40 steps: random moves and turns, the gripper closing and opening, then a steady push."""
    rng = np.random.default_rng(5)
    acts = np.concatenate([rng.uniform(-1, 1, (40, 6)), np.repeat([[-1.0], [1.0], [-1.0], [1.0]], 10, axis=0)], axis=1)
    acts[30:, :6] = [0.4, -0.2, 0.3, 0.0, 0.2, -0.3]
    return acts


def _hand_path(env, state, actions):
    env.reset_to(state)
    poses = []
    for a in actions:
        env.step(a)
        p = env.robot_proprio()
        poses.append((p["ee_pos"].copy(), p["ee_rot"].copy(), p["gripper_states"].copy()))
    return poses


def test_lean_controller_tracks_robosuites(soup_env, robosuite_env):
    assert soup_env.config.controller == "lean"
    robosuite_env.reset(seed=2)
    start = robosuite_env.get_state()
    lean = _hand_path(soup_env, start, _actions())
    ref = _hand_path(robosuite_env, start, _actions())
    moved = np.linalg.norm(ref[-1][0] - ref[0][0])
    assert moved > 0.05, "the actions should move the hand"
    for (pos, rot, grip), (pos_r, rot_r, grip_r) in zip(lean, ref):
        assert np.linalg.norm(pos - pos_r) < 1e-3
        cos = (np.trace(rot.T @ rot_r) - 1) / 2
        assert np.degrees(np.arccos(np.clip(cos, -1, 1))) < 0.2
        np.testing.assert_allclose(grip, grip_r, atol=1e-3)


def test_compiled_law_gives_robosuites_torques(soup_env, robosuite_env):
    """At a state with the arm moving, the compiled law's torques are those of robosuite's own controller
    under the same action (both clipped to the actuators' range). robosuite turns the goal through
    single-precision rotations (transform_utils), about 1e-6 relative, so a moving goal is compared at
    1e-5; holding still, the laws agree to rounding."""
    import mujoco

    robosuite_env.reset(seed=3)
    for a in _actions()[:8]:
        robosuite_env.step(a)
    state = robosuite_env.get_state()
    robot = robosuite_env.scene.robots[0]
    arm = robot.part_controllers["right"]
    acts = robot._ref_actuators_indexes_dict["right"]
    lo, hi = robosuite_env.model.actuator_ctrlrange[acts].T
    lean = soup_env._lean
    for action, rtol in (([0.5, -0.3, 0.2, 0.3, -0.2, 0.4], 1e-5), ([-1.0, 0.8, -0.6, -0.9, 0.7, -0.5], 1e-5),
                         ([0.0] * 6, 1e-10)):
        robosuite_env.reset_to(state)
        arm.update(force=True)
        arm.set_goal(np.array(action))
        ref = np.clip(arm.run_controller(), lo, hi)
        soup_env.reset_to(state)
        mujoco.mj_forward(soup_env.model, soup_env.data)
        lean._set_goal(arm.scale_action(np.array(action)))
        lean._apply_law()
        ours = soup_env.data.ctrl[acts]
        assert np.abs(ref).max() > 1.0, "the arm should be pushed"
        np.testing.assert_allclose(ours, ref, rtol=rtol, atol=1e-9)


def test_lean_replay_is_exact(soup_env):
    soup_env.reset(seed=4)
    start = soup_env.get_state()
    states = []
    for _ in range(2):
        soup_env.reset_to(start)
        for a in _actions()[:15]:
            soup_env.step(a)
        states.append(soup_env.get_state())
    np.testing.assert_array_equal(states[0][1:], states[1][1:])


def test_images_follow_the_arm(soup_env):
    obs = soup_env.reset(seed=0)
    for _ in range(6):
        moved, _, _ = soup_env.step(np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]))
    for key in ("agentview_rgb", "eye_in_hand_rgb"):
        assert np.abs(moved[key].astype(int) - obs[key].astype(int)).sum(axis=2).max() > 60, key


def test_unknown_controller_is_named(bowl_task):
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    with pytest.raises(LiberoError, match="lean, robosuite"):
        LiberoEnv(bowl_task, EnvConfig(controller="fast"))
