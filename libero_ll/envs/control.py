"""The arm's operational-space controller and the gripper, evaluated by our own code around MuJoCo's step.

`LeanControl` computes what robosuite 1.5's default Panda controller computes (OSC_POSE with delta
input in the arm base's frame, fixed impedance, decoupled position and orientation, nullspace torques
towards the home posture, the Panda gripper) with the gains and limits read from the robosuite
controller it stands in for. The law is evaluated at every physics substep, as robosuite does, since
the arm's inertia and Jacobian change too much within a control step to be held; but as one compiled
function (numba, which robosuite itself depends on) over MuJoCo's Jacobian and mass matrix instead of
robosuite's per-substep object updates, pseudo-inverses and bookkeeping, so that a control step costs
little more than its physics. The first use compiles the law (a few seconds), later processes load it
from numba's cache.
"""

from __future__ import annotations

import mujoco
import numba
import numpy as np

from libero_ll.errors import LiberoError

# robosuite's gain of the nullspace pull towards the home posture (control_utils.nullspace_torques),
# critically damped.
NULLSPACE_KP = 10.0
NULLSPACE_KV = 2.0 * np.sqrt(NULLSPACE_KP)
# Smallest pivot of the Cholesky factorisations: at an exact singularity of the arm the inertias become
# huge (the torques are clipped to the actuators' range) instead of infinite.
MIN_PIVOT = 1e-12


class LeanControl:
    """Drives a robosuite fixed-base arm with a Panda gripper for whole control steps.

    Args:
        model, data: the scene's MjModel and MjData.
        robot: the robosuite robot whose composite controller this replaces; its gains, limits,
            joints, actuators and home posture are read from it.
        substeps: physics steps per control step.
    """

    def __init__(self, model, data, robot, substeps: int):
        from robosuite.models.grippers.panda_gripper import PandaGripper

        arm = robot.part_controllers["right"]
        if (arm.name, arm.input_type, arm.input_ref_frame, arm.impedance_mode) != ("OSC_POSE", "delta", "base", "fixed") \
                or arm.interpolator_pos is not None or arm.interpolator_ori is not None or not arm.uncoupling \
                or arm.position_limits is not None or arm.orientation_limits is not None:
            raise LiberoError("the lean controller stands in for robosuite's OSC_POSE with delta input in the base "
                              "frame, fixed impedance, decoupled, without interpolation or limits; "
                              "use controller: robosuite for other settings")
        gripper = robot.gripper["right"]
        if not isinstance(gripper, PandaGripper):
            raise LiberoError(f"the lean controller drives the Panda gripper, not {type(gripper).__name__}")
        self.model, self.data = model, data
        self.substeps = int(substeps)
        self._qs = _contiguous(arm.qpos_index, "joint positions")
        self._vs = _contiguous(arm.qvel_index, "joint velocities")
        self._site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, arm.ref_name)
        self._origin = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, f"{arm.naming_prefix}{arm.part_name}_center")
        acts = robot._ref_actuators_indexes_dict
        self._arm_act = np.array(acts["right"])
        self._grip_act = np.array(acts["right_gripper"])
        # robosuite's scale_action: clip to the input range, map it onto the output range.
        self._in_lo, self._in_hi = arm.input_min, arm.input_max
        self._in_mid = (arm.input_max + arm.input_min) / 2
        self._out_mid = (arm.output_max + arm.output_min) / 2
        self._scale = np.abs(arm.output_max - arm.output_min) / np.abs(arm.input_max - arm.input_min)
        self._grip_lo, self._grip_hi = model.actuator_ctrlrange[self._grip_act].T.copy()
        self._grip_speed = float(gripper.speed)
        self._grip = np.zeros(2)
        self._jac = np.zeros((6, model.nv))
        self._jac_pos, self._jac_rot = self._jac[:3], self._jac[3:]
        self._full = np.zeros((model.nv, model.nv))
        self._qm = data.qM
        self._goal = np.zeros((4, 3))  # the goal: the hand's position, then its rotation matrix
        self._goal_pos, self._goal_rot = self._goal[0], self._goal[1:]
        # The law's arguments, fixed once: MjData keeps its arrays for its lifetime, so these views
        # follow the simulation.
        gains = np.zeros((5, len(arm.initial_joint)))  # kp, kd (6 each), home posture, torque range
        gains[0, :6], gains[1, :6], gains[2] = arm.kp, arm.kd, arm.initial_joint
        gains[3], gains[4] = model.actuator_ctrlrange[self._arm_act].T
        self._law_args = (self._jac, self._full, self._vs.start, data.qpos[self._qs], data.qvel[self._vs],
                          data.qfrc_bias[self._vs], data.site_xpos[self._site], data.site_xmat[self._site],
                          self._goal, gains, data.ctrl[_contiguous(self._arm_act, "actuators")])

    def reset(self) -> None:
        """Forget the gripper command, as robosuite does when it resets its robot."""
        self._grip[:] = 0.0

    def step(self, action: np.ndarray) -> None:
        """Advance the simulation by one control step under a 7-number action (6 arm deltas, gripper)."""
        m, d = self.model, self.data
        # The Panda gripper's command moves `speed` a step towards closed (action > 0) or open (< 0),
        # and is held for the whole control step.
        self._grip = np.clip(self._grip + np.array([-1.0, 1.0]) * self._grip_speed * np.sign(action[6]), -1.0, 1.0)
        mid, half = (self._grip_hi + self._grip_lo) / 2, (self._grip_hi - self._grip_lo) / 2
        d.ctrl[self._grip_act] = np.clip(mid + half * self._grip, self._grip_lo, self._grip_hi)
        delta = (np.clip(action[:6], self._in_lo, self._in_hi) - self._in_mid) * self._scale + self._out_mid
        step1, step2, law = mujoco.mj_step1, mujoco.mj_step2, self._apply_law
        for k in range(self.substeps):
            step1(m, d)
            if k == 0:
                self._set_goal(delta)
            law()
            step2(m, d)

    def _apply_law(self) -> None:
        """Write the arm's torques for the current substep (positions and velocities propagated) into
        its controls."""
        mujoco.mj_jacSite(self.model, self.data, self._jac_pos, self._jac_rot, self._site)
        mujoco.mj_fullM(self.model, self._full, self._qm)
        _osc_law(*self._law_args)

    def _set_goal(self, delta: np.ndarray) -> None:
        # robosuite's "achieved" goal mode: the deltas, in the arm base's frame, start from where the hand is.
        d = self.data
        base_rot = d.site_xmat[self._origin].reshape(3, 3)
        self._goal_pos[:] = d.site_xpos[self._site] + base_rot @ delta[:3]
        turn = np.eye(3)
        angle = float(np.linalg.norm(delta[3:]))
        if angle > 1e-10:
            quat = np.zeros(4)
            mujoco.mju_axisAngle2Quat(quat, delta[3:] / angle, angle)
            mujoco.mju_quat2Mat(turn.reshape(9), quat)
        self._goal_rot[:] = base_rot @ turn @ base_rot.T @ d.site_xmat[self._site].reshape(3, 3)


def _contiguous(indexes, what: str) -> slice:
    idx = [int(i) for i in indexes]
    if idx != list(range(idx[0], idx[0] + len(idx))):
        raise LiberoError(f"the lean controller needs the arm's {what} side by side in the simulator state, got {idx}")
    return slice(idx[0], idx[0] + len(idx))


@numba.njit(cache=True, nogil=True)
def _osc_law(jac, full, v0, qpos, qvel, bias, site_pos, site_rot, goal, gains, ctrl):
    """Joint torques of the operational-space law at the current substep, clipped to the actuators'
    range and written into `ctrl`.

    tau = J^T (L_pos f_pos ; L_ori f_ori) + N^T M p + bias, where f = kp * error - kd * J qdot is the
    desired wrench, L_* = (J_* M^-1 J_*^T)^-1 the operational-space inertias, p = kn (home - q) - kv qdot
    the posture acceleration and N^T M = M - J^T L J (L the full 6-D inertia). robosuite takes
    pseudo-inverses where this solves by Cholesky factors: for these positive definite matrices the two
    agree up to rounding.

    Args:
        jac: (6, nv) the hand site's Jacobian, position rows first; full: (nv, nv) the mass matrix;
        v0: the arm's first velocity index; qpos, qvel, bias: the arm's joint positions, velocities
        and bias forces; site_pos, site_rot: the hand site's position and rotation (9, row-major);
        goal: (4, 3) the goal position, then the goal rotation; gains: (5, n) kp and kd (6 each),
        the home posture, the torque range's low and high ends.
    """
    n = qpos.shape[0]
    j = jac[:, v0:v0 + n]
    mass = full[v0:v0 + n, v0:v0 + n]
    # a = J M^-1 J^T, the inverse of the full operational-space inertia.
    minv_jt = np.empty((n, 6))
    for r in range(6):
        minv_jt[:, r] = _spd_solve(mass, j[r])
    a = np.empty((6, 6))
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(n):
                s += j[r, k] * minv_jt[k, c]
            a[r, c] = s
    # robosuite's orientation error, 0.5 * sum_i current_i x goal_i over the columns, is
    # 0.5 * vee(R_goal R^T - R R_goal^T).
    rot = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            rot[r, c] = goal[1 + r, 0] * site_rot[3 * c] + goal[1 + r, 1] * site_rot[3 * c + 1] \
                + goal[1 + r, 2] * site_rot[3 * c + 2]
    err = np.empty(6)
    for i in range(3):
        err[i] = goal[0, i] - site_pos[i]
    err[3] = 0.5 * (rot[2, 1] - rot[1, 2])
    err[4] = 0.5 * (rot[0, 2] - rot[2, 0])
    err[5] = 0.5 * (rot[1, 0] - rot[0, 1])
    posture = np.empty(n)
    for k in range(n):
        posture[k] = NULLSPACE_KP * (gains[2, k] - qpos[k]) - NULLSPACE_KV * qvel[k]
    force = np.empty(6)
    j_posture = np.empty(6)
    for r in range(6):
        velocity = 0.0
        s = 0.0
        for k in range(n):
            velocity += j[r, k] * qvel[k]
            s += j[r, k] * posture[k]
        force[r] = gains[0, r] * err[r] - gains[1, r] * velocity
        j_posture[r] = s
    wrench = np.empty(6)
    wrench[:3] = _spd_solve(a[:3, :3], force[:3])
    wrench[3:] = _spd_solve(a[3:, 3:], force[3:])
    wrench -= _spd_solve(a, j_posture)
    for k in range(n):
        t = bias[k]
        for r in range(6):
            t += j[r, k] * wrench[r]
        for c in range(n):
            t += mass[k, c] * posture[c]
        ctrl[k] = min(max(t, gains[3, k]), gains[4, k])


@numba.njit(cache=True, nogil=True)
def _spd_solve(mat, rhs):
    """mat^-1 rhs for a symmetric positive definite mat, by its Cholesky factor; pivots under MIN_PIVOT
    are raised to it."""
    n = rhs.shape[0]
    low = np.zeros((n, n))
    for c in range(n):
        s = mat[c, c]
        for k in range(c):
            s -= low[c, k] * low[c, k]
        pivot = np.sqrt(max(s, MIN_PIVOT))
        low[c, c] = pivot
        for r in range(c + 1, n):
            t = mat[r, c]
            for k in range(c):
                t -= low[r, k] * low[c, k]
            low[r, c] = t / pivot
    x = np.empty(n)
    for r in range(n):
        t = rhs[r]
        for k in range(r):
            t -= low[r, k] * x[k]
        x[r] = t / low[r, r]
    for r in range(n - 1, -1, -1):
        t = x[r]
        for k in range(r + 1, n):
            t -= low[k, r] * x[k]
        x[r] = t / low[r, r]
    return x
