"""The arm's operational-space controller and the gripper, evaluated by our own code around MuJoCo's step.

`LeanControl` computes what robosuite 1.5's default Panda controller computes (OSC_POSE with delta
input in the arm base's frame, fixed impedance, decoupled position and orientation, nullspace torques
towards the home posture, the Panda gripper) with the gains and limits read from the robosuite
controller it stands in for. The law is evaluated at every physics substep, as robosuite does, since
the arm's inertia and Jacobian change too much within a control step to be held; but with MuJoCo's
small dense Cholesky routines and a few numpy products instead of robosuite's per-substep object
updates, pseudo-inverses and bookkeeping, so that a control step costs little more than its physics.
"""

from __future__ import annotations

import mujoco
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
        self._kp, self._kd = np.asarray(arm.kp, float).copy(), np.asarray(arm.kd, float).copy()
        self._home = np.array(arm.initial_joint, dtype=float)
        self._tau_lo, self._tau_hi = model.actuator_ctrlrange[self._arm_act].T.copy()
        self._grip_lo, self._grip_hi = model.actuator_ctrlrange[self._grip_act].T.copy()
        self._grip_speed = float(gripper.speed)
        self._grip = np.zeros(2)
        n = len(self._home)
        self._jac = np.zeros((6, model.nv))
        self._full = np.zeros((model.nv, model.nv))
        # Views, fixed once: the arm's Jacobian columns and mass-matrix block, and the simulator
        # quantities read at every substep (MjData keeps its arrays for its lifetime).
        self._jac_pos, self._jac_rot = self._jac[:3], self._jac[3:]
        self._j = self._jac[:, self._vs]
        self._j_t = self._j.T
        self._j_rows = list(self._j)
        self._mass = self._full[self._vs, self._vs]
        self._qm = data.qM
        self._site_pos = data.site_xpos[self._site]
        self._site_rot_t = data.site_xmat[self._site].reshape(3, 3).T
        self._qpos, self._qvel, self._bias = data.qpos[self._qs], data.qvel[self._vs], data.qfrc_bias[self._vs]
        self._ctrl = data.ctrl[_contiguous(self._arm_act, "actuators")]
        self._chol_m = np.zeros((n, n))
        self._minv_jt = np.zeros((6, n))  # row i: M^-1 times Jacobian row i
        self._minv_rows = list(self._minv_jt)
        self._minv_t = self._minv_jt.T
        self._a = np.zeros((6, 6))
        self._a_pos, self._a_ori = self._a[:3, :3], self._a[3:, 3:]
        self._rot = np.zeros((3, 3))
        self._rot_flat = self._rot.reshape(9)
        self._chol_pos, self._chol_ori, self._chol_full = np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((6, 6))
        self._wrench = np.zeros(6)
        self._null = np.zeros(6)
        self._err = np.zeros(6)
        self._err_pos = self._err[:3]
        self._jv = np.zeros(6)
        self._force = np.zeros(6)
        self._posture = np.zeros(n)
        self._jp = np.zeros(6)
        self._tau = np.zeros(n)
        self._goal_pos = np.zeros(3)
        self._goal_rot = np.eye(3)

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
        step1, step2, torques = mujoco.mj_step1, mujoco.mj_step2, self._torques
        for k in range(self.substeps):
            step1(m, d)
            if k == 0:
                self._set_goal(delta)
            torques()
            step2(m, d)

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

    def _torques(self) -> None:
        """Joint torques of the operational-space law at the current substep, clipped to the actuators,
        written into the arm's controls.

        tau = J^T (L_pos f_pos ; L_ori f_ori) + N^T M p + bias, where f = kp * error - kd * J qdot is
        the desired wrench, L_* = (J_* M^-1 J_*^T)^-1 the operational-space inertias, p = kn (home - q)
        - kv qdot the posture acceleration and N^T M = M - J^T L J (L the full 6-D inertia). robosuite
        takes pseudo-inverses where this solves by Cholesky factors: for these positive definite
        matrices the two agree up to rounding. Every product writes into an array made once (the law
        runs 25 times a control step, and small numpy calls cost more than their arithmetic).
        """
        m, d = self.model, self.data
        matmul, subtract, multiply, chol_solve = np.matmul, np.subtract, np.multiply, mujoco.mju_cholSolve
        mujoco.mj_jacSite(m, d, self._jac_pos, self._jac_rot, self._site)
        mujoco.mj_fullM(m, self._full, self._qm)
        j, mass, qvel, chol = self._j, self._mass, self._qvel, self._chol_m
        chol[:] = mass
        mujoco.mju_cholFactor(chol, MIN_PIVOT)
        for out, row in zip(self._minv_rows, self._j_rows):
            chol_solve(out, chol, row)
        a = matmul(j, self._minv_t, out=self._a)
        r = self._rot_flat
        matmul(self._goal_rot, self._site_rot_t, out=self._rot)
        err = self._err
        subtract(self._goal_pos, self._site_pos, out=self._err_pos)
        # robosuite's orientation error, 0.5 * sum_i current_i x goal_i over the columns, is
        # 0.5 * vee(R_goal R^T - R R_goal^T).
        err[3] = 0.5 * (r[7] - r[5])
        err[4] = 0.5 * (r[2] - r[6])
        err[5] = 0.5 * (r[3] - r[1])
        force, jv = self._force, self._jv
        multiply(self._kp, err, out=force)
        multiply(self._kd, matmul(j, qvel, out=jv), out=jv)
        subtract(force, jv, out=force)
        self._solve(self._a_pos, force[:3], self._wrench[:3], self._chol_pos)
        self._solve(self._a_ori, force[3:], self._wrench[3:], self._chol_ori)
        posture = self._posture
        multiply(NULLSPACE_KP, subtract(self._home, self._qpos, out=posture), out=posture)
        subtract(posture, NULLSPACE_KV * qvel, out=posture)
        self._solve(a, matmul(j, posture, out=self._jp), self._null, self._chol_full)
        tau = self._tau
        matmul(self._j_t, subtract(self._wrench, self._null, out=self._jv), out=tau)
        tau += mass @ posture
        tau += self._bias
        np.minimum(np.maximum(tau, self._tau_lo, out=tau), self._tau_hi, out=self._ctrl)

    @staticmethod
    def _solve(mat: np.ndarray, rhs: np.ndarray, out: np.ndarray, work: np.ndarray) -> None:
        """out = mat^-1 rhs for a symmetric positive definite mat (work: a scratch matrix of its shape;
        rhs contiguous)."""
        work[:] = mat
        mujoco.mju_cholFactor(work, MIN_PIVOT)
        mujoco.mju_cholSolve(out, work, rhs)


def _contiguous(indexes, what: str) -> slice:
    idx = [int(i) for i in indexes]
    if idx != list(range(idx[0], idx[0] + len(idx))):
        raise LiberoError(f"the lean controller needs the arm's {what} side by side in the simulator state, got {idx}")
    return slice(idx[0], idx[0] + len(idx))
