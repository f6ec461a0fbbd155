"""The lifelong loop of shared/spec/protocol.md: learn tasks in order, evaluate, keep the best, record the tensor."""

from __future__ import annotations

import copy
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from libero_ll.errors import LiberoError

REPO_ROOT = Path(__file__).resolve().parents[2]


def suite_dir(suite: str) -> Path:
    """The folder of a suite's task files: a path, or a name under the shipped bddl_tasks/."""
    p = Path(suite)
    if p.is_dir():
        return p
    shipped = REPO_ROOT / "bddl_tasks" / suite
    if shipped.is_dir():
        return shipped
    known = sorted(d.name for d in (REPO_ROOT / "bddl_tasks").iterdir() if d.is_dir())
    raise LiberoError(f"unknown suite {suite!r}: not a folder, and not one of {', '.join(known)}")


def suite_tasks(suite: str, names: list[str] | None = None) -> list[Path]:
    """Task files of a suite in learning order (the given names, or all sorted by name)."""
    folder = suite_dir(suite)
    files = {f.stem: f for f in sorted(folder.glob("*.bddl"))}
    if not files:
        raise LiberoError(f"{folder}: no .bddl task files")
    if names is None:
        return list(files.values())
    missing = [n for n in names if n not in files]
    if missing:
        raise LiberoError(f"suite {suite}: unknown tasks {missing}; known: {', '.join(files)}")
    return [files[n] for n in names]


def seed_everything(seed: int) -> None:
    """One seed for numpy, torch and Python's hash-free randomness."""
    import random

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _atomic_torch_save(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def run_lifelong(cfg, log: Callable[[str], None] = print) -> Path:
    """Run one lifelong experiment end to end and return its run directory.

    Steps: collect missing demos with the expert, embed instructions, then for each task k: evaluate
    at epoch 0, train `train.epochs` epochs evaluating every `eval.every`, restore the best
    checkpoint (earliest on ties), let the learner finish the task, evaluate earlier tasks.
    The success tensor is saved after every evaluation.

    Args:
        cfg: an ExperimentConfig-shaped OmegaConf config (see `load_config`).
        log: receives one line per event.
    """
    from omegaconf import OmegaConf

    from libero_ll.data.collect import collect_task
    from libero_ll.data.dataset import SequenceDataset, load_task_data
    from libero_ll.envs.env import EnvConfig, LiberoEnv
    from libero_ll.evaluation.rollout import evaluate_task
    from libero_ll.evaluation.success import SuccessTensor
    from libero_ll.learners import TrainConfig, make_learner
    from libero_ll.policies import make_policy
    from libero_ll.policies.language import encode_instructions

    check_components(cfg)
    torch.set_num_threads(int(cfg.num_threads))
    seed_everything(int(cfg.seed))
    device = _device(cfg.device)
    tasks = suite_tasks(cfg.suite, list(cfg.tasks) if cfg.tasks else None)
    names = [t.stem for t in tasks]
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = Path(cfg.output_dir) / f"{cfg.name}_{Path(cfg.suite).name}_{cfg.learner.name}_{cfg.policy.name}_seed{cfg.seed}_{stamp}"
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=False)
    tmp = run_dir / "config.yaml.tmp"
    OmegaConf.save(cfg, tmp)
    os.replace(tmp, run_dir / "config.yaml")
    log(f"run directory: {run_dir}")

    env_cfg = EnvConfig(
        image_size=int(cfg.env.image_size),
        robot_mesh=str(cfg.env.robot_mesh),
        shadows=bool(cfg.env.shadows),
        reflections=bool(cfg.env.reflections),
        max_steps=int(cfg.eval.max_steps),
    )

    # 1. demonstrations
    data_dir = Path(cfg.data.dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        path = data_dir / f"{task.stem}.hdf5"
        if path.exists():
            continue
        t0 = time.time()
        stats = collect_task(
            task, path, int(cfg.data.demos_per_task), int(cfg.data.collect_seed), env_cfg,
            max_steps=int(cfg.data.expert_max_steps),
        )
        log(
            f"collected {stats.kept} demos of {task.stem} in {time.time() - t0:.0f}s "
            f"(expert success {stats.success_rate:.0%}, mean length {stats.mean_length:.0f})"
        )

    # 2. language and data
    envs = [LiberoEnv(t, env_cfg) for t in tasks]
    instructions = [e.spec.language for e in envs]
    embs = encode_instructions(instructions, str(cfg.language_encoder))
    policy_cfg = OmegaConf.to_container(cfg.policy.cfg, resolve=True)
    shape_meta = {
        "image_shape": (int(cfg.env.image_size), int(cfg.env.image_size), 3),
        "lowdim": {"joint_states": 7, "gripper_states": 2, "ee_states": 6},
        "action_dim": 7,
        "task_emb_dim": int(embs.shape[1]),
    }
    policy = make_policy(str(cfg.policy.name), policy_cfg, shape_meta).to(device)
    obs_keys = policy.image_keys + policy.lowdim_keys
    task_data = [
        load_task_data(data_dir / f"{t.stem}.hdf5", k, embs[k], obs_keys, int(cfg.data.demos_per_task))
        for k, t in enumerate(tasks)
    ]
    for k, (td, t) in enumerate(zip(task_data, tasks)):
        have = td.demos[0]["agentview_rgb"].shape[1] if "agentview_rgb" in td.demos[0] else None
        if have is not None and have != int(cfg.env.image_size):
            raise LiberoError(
                f"{data_dir / (t.stem + '.hdf5')}: images are {have}x{have} but env.image_size is "
                f"{cfg.env.image_size}; use another data.dir or delete the file to re-collect"
            )
    # Low-dim inputs are standardised with the first task's statistics only: later tasks are unseen.
    first = {k: np.concatenate([d[k] for d in task_data[0].demos]) for k in policy.lowdim_keys}
    policy.set_lowdim_stats({k: (v.mean(0), v.std(0)) for k, v in first.items()})
    init_states = [e.sample_init_states(int(cfg.eval.init_states), int(cfg.eval.init_seed) + k) for k, e in enumerate(envs)]
    np.savez(run_dir / "init_states.npz", **{n: s for n, s in zip(names, init_states)})

    train_cfg = TrainConfig(**OmegaConf.to_container(cfg.train, resolve=True))
    learner = make_learner(str(cfg.learner.name), policy, train_cfg, OmegaConf.to_container(cfg.learner.options))
    learner.rng = np.random.default_rng(int(cfg.seed))
    tensor = SuccessTensor.empty(names)
    every = max(1, int(cfg.eval.every))

    def evaluate(k: int) -> float:
        policy.eval()
        with torch.no_grad():
            return evaluate_task(policy, envs[k], init_states[k], embs[k], int(cfg.eval.rollouts), int(cfg.eval.max_steps))

    # 3. the lifelong loop
    for k, task in enumerate(tasks):
        dataset = SequenceDataset([task_data[k]], policy.seq_len, obs_keys)
        learner.start_task(k, task_data[k])
        t0 = time.time()
        success = evaluate(k)
        tensor.eval_epochs[k].append(0)
        tensor.curves[k].append(success)
        best, best_state = success, copy.deepcopy(policy.state_dict())
        tensor.save(run_dir / "success.json")
        log(f"task {k + 1}/{len(tasks)} {task.stem}: epoch 0 success {success:.2f}")
        for epoch in range(1, int(cfg.train.epochs) + 1):
            loss = learner.train_epoch(dataset)
            tensor.losses[k].append(loss)
            if epoch % every == 0 or epoch == int(cfg.train.epochs):
                success = evaluate(k)
                tensor.eval_epochs[k].append(epoch)
                tensor.curves[k].append(success)
                if success > best:
                    best, best_state = success, copy.deepcopy(policy.state_dict())
                tensor.save(run_dir / "success.json")
                log(f"task {k + 1} epoch {epoch}: loss {loss:.3f} success {success:.2f} ({time.time() - t0:.0f}s)")
        policy.load_state_dict(best_state)
        _atomic_torch_save(
            {"policy": best_state, "task": k, "task_name": task.stem, "success": best, "config": OmegaConf.to_container(cfg)},
            run_dir / "checkpoints" / f"task{k:02d}_best.pt",
        )
        learner.end_task(k, task_data[k])
        tensor.matrix[k, k] = best
        if cfg.eval.past_tasks:
            for j in range(k):
                tensor.matrix[k, j] = evaluate(j)
                log(f"after task {k + 1}: success on task {j + 1} {tensor.matrix[k, j]:.2f}")
        tensor.save(run_dir / "success.json")
    for e in envs:
        e.close()
    return run_dir


def check_components(cfg) -> None:
    """Fail before any work is done when the policy, its keys, the learner or its options are unknown."""
    from omegaconf import OmegaConf

    import libero_ll.learners  # noqa: F401  (registration)
    import libero_ll.policies  # noqa: F401
    from libero_ll.learners.registry import LEARNERS
    from libero_ll.policies.base import coerce_config
    from libero_ll.policies.registry import POLICIES

    policy_cls = POLICIES.get(str(cfg.policy.name))
    coerce_config(policy_cls.config_class, OmegaConf.to_container(cfg.policy.cfg, resolve=True))
    LEARNERS.get(str(cfg.learner.name)).check_options(OmegaConf.to_container(cfg.learner.options))
    suite_tasks(cfg.suite, list(cfg.tasks) if cfg.tasks else None)


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise LiberoError("device=cuda but no CUDA GPU is available; use device=auto or device=cpu")
    return torch.device(name)


