"""`libero-ll evaluate`: a run's saved policy rolled out again, as the run would, with new states and videos."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from libero_ll.cli import main
from libero_ll.errors import LiberoError
from libero_ll.experiments.evaluate import evaluate_run, wilson_interval
from libero_ll.experiments.lifelong import run_lifelong

FAST = ["train.epochs=2", "eval.max_steps=6", "eval.init_states=2", "eval.rollouts=2", "language_encoder=task_id",
        "policy.cfg.deterministic_eval=true"]


class Frames:
    """A rollout recorder that keeps every observation's agentview image."""

    def __init__(self):
        self.frames: dict[tuple[int, int], list[np.ndarray]] = {}
        self.ends: dict[tuple[int, int], bool] = {}

    def frame(self, task, index, obs):
        self.frames.setdefault((task, index), []).append(np.array(obs["agentview_rgb"]))

    def end(self, task, index, success):
        self.ends[(task, index)] = success


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, smoke_data, smoke_envs, make_smoke_config) -> Path:
    import torch

    cfg = make_smoke_config(tmp_path_factory.mktemp("evaluate"), smoke_data, *FAST)
    run = run_lifelong(cfg, log=lambda s: None, envs=smoke_envs)
    # A smoke run succeeds nowhere, so every stage keeps its epoch-0 weights and all its policies are alike.
    # Other final weights tell which file an evaluation loaded.
    final = torch.load(run / "final_policy.pt", weights_only=True)
    torch.manual_seed(0)
    final["policy"] = {k: v + 0.05 * torch.randn_like(v) if v.is_floating_point() else v
                       for k, v in final["policy"].items()}
    torch.save(final, run / "final_policy.pt")
    return run


def _same(a: Frames, b: Frames, levels: int = 0, share: float = 0.0) -> bool:
    """The same rollouts, frame for frame; with `levels` and `share`, up to pixels that differ by at most
    `levels` on at most a `share` of each frame (the rounding of a policy batch of another size: on some
    processors a pixel here and there by one level, seen on an Intel Xeon with AVX-512), never a scene."""
    def close(x: np.ndarray, y: np.ndarray) -> bool:
        d = np.abs(x.astype(np.int16) - y.astype(np.int16))
        return int(d.max()) <= levels and float(np.mean(d > 0)) <= share

    return a.frames.keys() == b.frames.keys() and all(
        len(a.frames[k]) == len(b.frames[k]) and all(close(x, y) for x, y in zip(a.frames[k], b.frames[k]))
        for k in a.frames
    )


def test_final_policy_rolls_out_as_loaded_by_hand(run_dir, smoke_envs):
    import torch

    from libero_ll.data.hdf5 import LOWDIM_SIZES
    from libero_ll.evaluation.rollout import run_rollouts
    from libero_ll.experiments.config import load_config, policy_config
    from libero_ll.experiments.checkpoint import load_policy_weights
    from libero_ll.policies import make_policy
    from libero_ll.policies.language import encode_instructions

    here, there = Frames(), Frames()
    result = evaluate_run(run_dir, rollouts=3, workers=1, recorder=here, log=lambda s: None)
    assert [r.number for r in result.tasks] == [1, 2] and result.checkpoint == "final_policy.pt"
    assert all(r.rollouts == 3 and len(r.outcomes) == 3 for r in result.tasks)
    # Two worker processes give the same rollouts as one (a slot takes a second rollout), the policy batched
    # over both workers' rollouts.
    evaluate_run(run_dir, rollouts=3, workers=2, recorder=there, log=lambda s: None)
    assert _same(here, there, levels=2, share=0.01) and here.ends == there.ends
    swapped = Frames()
    swapped.frames = {**there.frames, (0, 0): there.frames[(0, 1)], (0, 1): there.frames[(0, 0)]}
    assert not _same(here, swapped, levels=2, share=0.01)  # rollouts from two initial states mixed up would not pass
    # The same rollouts, built by hand from the run's files.
    cfg = load_config(run_dir / "config.yaml")
    embs = encode_instructions([e.spec.language for e in smoke_envs], "task_id")
    meta = {"image_shape": (32, 32, 3), "lowdim": LOWDIM_SIZES, "action_dim": 7, "task_emb_dim": embs.shape[1]}
    policy = make_policy("resnet_t", policy_config(cfg), meta)
    load_policy_weights(policy, run_dir / "final_policy.pt")
    policy.eval()
    by_hand = Frames()
    with np.load(run_dir / "init_states.npz") as f, torch.no_grad():
        for j, env in enumerate(smoke_envs):
            run_rollouts(policy, env, f[list(cfg.tasks)[j]], embs[j], 3, 6, int(cfg.eval.still_steps),
                         recorder=by_hand, task=j)
    assert _same(here, by_hand)
    # Every rollout's frames change as the arm moves, and each rollout was ended once.
    assert all(not np.array_equal(v[0], v[-1]) for v in here.frames.values())
    assert set(here.ends) == set(here.frames)


def test_latest_rolls_out_a_run_stopped_mid_stage_with_its_averaged_weights(tmp_path, smoke_data, smoke_envs,
                                                                              make_smoke_config, stop_run):
    import torch

    from libero_ll.data.hdf5 import LOWDIM_SIZES
    from libero_ll.evaluation.rollout import run_rollouts
    from libero_ll.experiments.config import load_config, policy_config
    from libero_ll.experiments.checkpoint import load_checkpoint, load_policy_weights
    from libero_ll.policies import make_policy
    from libero_ll.policies.language import encode_instructions

    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, "train.ema_decay=0.9")
    # Stopped after epoch 2's evaluation, before epoch 2 is saved.
    run = stop_run(cfg, "stage 1 epoch 2", smoke_envs)
    assert not (run / "final_policy.pt").exists() and not list((run / "checkpoints").glob("*.pt"))
    here = Frames()
    result = evaluate_run(run, checkpoint="latest", rollouts=2, workers=1, recorder=here, log=lambda s: None)
    # The task begun, from the saved state.
    assert result.checkpoint == "resume.pt" and [r.number for r in result.tasks] == [1]
    # The same rollouts as epoch 1's averaged weights loaded by hand; the raw weights act otherwise.
    state = load_checkpoint(run / "resume.pt")
    assert state["position"] == {"stage": 0, "phase": "train", "epoch": 1} and state["learner"]["ema"]
    run_cfg = load_config(run / "config.yaml")
    embs = encode_instructions([e.spec.language for e in smoke_envs], "task_id")
    meta = {"image_shape": (32, 32, 3), "lowdim": LOWDIM_SIZES, "action_dim": 7, "task_emb_dim": embs.shape[1]}
    rolled = {}
    for weights in ("averaged", "raw"):
        policy = make_policy("resnet_t", policy_config(run_cfg), meta)
        load_policy_weights(policy, run / "resume.pt")
        if weights == "averaged":
            with torch.no_grad():
                for name, p in policy.named_parameters():
                    p.copy_(state["learner"]["ema"][name])
        policy.eval()
        rolled[weights] = Frames()
        with np.load(run / "init_states.npz") as f, torch.no_grad():
            run_rollouts(policy, smoke_envs[0], f[list(run_cfg.tasks)[0]], embs[0], 2, 6,
                         int(run_cfg.eval.still_steps), recorder=rolled[weights], task=0)
    assert _same(here, rolled["averaged"])
    assert not _same(here, rolled["raw"])
    # From the command line too, into the run's evaluations folder.
    assert main(["evaluate", str(run), "--checkpoint", "latest", "--rollouts", "1", "--workers", "1"]) == 0
    assert [p.name.split("_")[0] for p in (run / "evaluations").glob("*.json")] == ["resume"]


def test_stage_checkpoint_and_new_states(run_dir):
    first, again, own = Frames(), Frames(), Frames()
    result = evaluate_run(run_dir, checkpoint="1", new_states=3, init_seed=5, workers=1, recorder=first,
                          log=lambda s: None)
    # A stage's policy is evaluated on the stage's own task by default, from the 3 new states.
    assert result.checkpoint == "checkpoints/task00_best.pt" and [r.number for r in result.tasks] == [1]
    assert result.tasks[0].rollouts == 3 and "3 new initial states" in result.init_states
    evaluate_run(run_dir, checkpoint="1", new_states=3, init_seed=5, workers=1, recorder=again, log=lambda s: None)
    assert _same(first, again)
    evaluate_run(run_dir, checkpoint="1", rollouts=2, workers=1, recorder=own, log=lambda s: None)
    # New states are not the run's own: the first images differ.
    assert not np.array_equal(first.frames[(0, 0)][0], own.frames[(0, 0)][0])
    # The stage's policy is not the final one: from the same states the arm moves otherwise.
    final = Frames()
    evaluate_run(run_dir, tasks=["1"], rollouts=2, workers=1, recorder=final, log=lambda s: None)
    assert np.array_equal(final.frames[(0, 0)][0], own.frames[(0, 0)][0])
    assert not np.array_equal(final.frames[(0, 0)][-1], own.frames[(0, 0)][-1])
    assert not np.array_equal(first.frames[(0, 0)][0], first.frames[(0, 1)][0])


def test_the_weights_a_stage_ended_with(run_dir, capsys):
    # Every stage of the smoke run keeps its epoch-0 weights, so each saved those of its last epoch too.
    result = evaluate_run(run_dir, checkpoint="1:last", rollouts=1, workers=1, log=lambda s: None)
    assert result.checkpoint == "checkpoints/task00_last.pt" and [r.number for r in result.tasks] == [1]
    assert main(["evaluate", str(run_dir), "--checkpoint", "2:last", "--rollouts", "1", "--workers", "1",
                 "--out", str(run_dir.parent / "last.json")]) == 0
    assert "checkpoints/task01_last.pt" in (run_dir.parent / "last.json").read_text()
    capsys.readouterr()


def test_new_states_are_seeded_by_the_task_not_its_number(run_dir, smoke_envs):
    # They were sampled with init_seed + the task's number: the same task got other states in another order.
    from libero_ll.envs.init_states import sample_init_states, task_init_seed

    rec = Frames()
    evaluate_run(run_dir, tasks=["2"], new_states=2, init_seed=5, workers=1, recorder=rec, log=lambda s: None)
    env = smoke_envs[1]
    states = sample_init_states(env, 2, task_init_seed(Path(env.spec.path).stem, 5))
    for i, state in enumerate(states):
        assert np.array_equal(rec.frames[(1, i)][0], env.reset_to(state)["agentview_rgb"])


def test_a_run_evaluates_with_its_own_task_files_from_anywhere(run_dir, tmp_path, monkeypatch):
    """A run keeps copies of its task files (and their stored initial states) with their learning order, and
    is evaluated with them: moved to another machine, or read from another folder than it was trained in,
    where the suite its config names (a relative folder, say) is not found."""
    from libero_ll.envs.init_states import init_states_path
    from libero_ll.experiments.lifelong import suite_tasks
    from libero_ll.experiments.run_files import run_task_files

    cfg_text = (run_dir / "config.yaml").read_text()
    shipped = suite_tasks("quickstart", ["put_the_alphabet_soup_in_the_basket", "put_the_black_bowl_on_the_plate"])
    kept = run_task_files(run_dir)
    assert [f.name for f in kept] == [f.name for f in shipped]  # the learning order of the smoke preset
    for own, src in zip(kept, shipped):
        assert own.parent == run_dir / "tasks" and own.read_bytes() == src.read_bytes()
        assert init_states_path(own).read_bytes() == init_states_path(src).read_bytes()

    moved = tmp_path / "elsewhere" / run_dir.name
    shutil.copytree(run_dir, moved)
    (moved / "config.yaml").write_text(cfg_text.replace("suite: quickstart", "suite: my_suites/generated"))
    monkeypatch.chdir(tmp_path)
    here, there = Frames(), Frames()
    evaluate_run(run_dir, rollouts=2, workers=1, recorder=here, log=lambda s: None)
    result = evaluate_run(moved, rollouts=2, workers=1, recorder=there, log=lambda s: None)
    assert [r.task for r in result.tasks] == [f.stem for f in shipped]
    assert _same(here, there)
    # The suite's file changed since the run (here: the run's copy edited): the copy is used, and the log says so.
    (moved / "config.yaml").write_text(cfg_text)
    with open(moved / "tasks" / f"{shipped[1].stem}.bddl", "a") as f:
        f.write("\n")
    lines = []
    evaluate_run(moved, rollouts=1, max_steps=2, workers=1, log=lines.append)
    notes = [line for line in lines if line.startswith("note:")]
    assert notes == [f"note: the suite's task file {shipped[1].stem}.bddl has changed since the run; the run's own "
                     "copy is used"]
    # A run from before runs kept their task files falls back on its config's suite, and names it when missing.
    (moved / "config.yaml").write_text(cfg_text.replace("suite: quickstart", "suite: my_suites/generated"))
    shutil.rmtree(moved / "tasks")
    with pytest.raises(LiberoError, match="unknown suite 'my_suites/generated'"):
        evaluate_run(moved, rollouts=1, workers=1, log=lambda s: None)


def test_actions_sampled_or_at_the_mode_whatever_the_run_used(run_dir, tmp_path):
    """The run acted at the head's mode (FAST); `actions` overrides that for one evaluation."""
    own, mode, sampled, again = Frames(), Frames(), Frames(), Frames()
    result = evaluate_run(run_dir, rollouts=2, workers=1, recorder=own, log=lambda s: None)
    assert result.actions == "mode"
    result = evaluate_run(run_dir, rollouts=2, workers=1, recorder=mode, log=lambda s: None, actions="mode")
    assert result.actions == "mode"
    assert _same(own, mode)
    lines = []
    result = evaluate_run(run_dir, rollouts=2, workers=1, recorder=sampled, log=lines.append, actions="sampled")
    assert result.actions == "sampled" and "sampled actions" in lines[0]
    # Sampled actions move the arm otherwise; the draws are seeded, so the same evaluation repeats exactly.
    assert not _same(own, sampled)
    evaluate_run(run_dir, rollouts=2, workers=1, recorder=again, log=lambda s: None, actions="sampled")
    assert _same(sampled, again)
    # The run's config is unchanged; the CLI takes the same choice and records it.
    assert "deterministic_eval: true" in (run_dir / "config.yaml").read_text()
    out = tmp_path / "sampled.json"
    assert main(["evaluate", str(run_dir), "--rollouts", "1", "--workers", "1", "--actions", "sampled",
                 "--out", str(out)]) == 0
    assert json.loads(out.read_text())["actions"] == "sampled"


def test_cli_writes_results_and_videos(run_dir, tmp_path, capsys):
    import av

    out = tmp_path / "eval.json"
    video = tmp_path / "video"
    assert main(["evaluate", str(run_dir), "--checkpoint", "2", "--tasks", "1,2", "--rollouts", "1",
                 "--workers", "1", "--video", str(video), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "95% interval" in printed and "put_the_black_bowl_on_the_plate" in printed
    saved = json.loads(out.read_text())
    assert [t["number"] for t in saved["tasks"]] == [1, 2] and saved["checkpoint"] == "checkpoints/task01_best.pt"
    files = sorted(video.rglob("*.mp4"))
    assert [f.parent.name for f in files] == ["put_the_alphabet_soup_in_the_basket", "put_the_black_bowl_on_the_plate"]
    assert all(f.name in ("rollout000_success.mp4", "rollout000_failure.mp4") for f in files)
    with av.open(str(files[0])) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    # The first image and one per step (the cap is 6 unless the scene stood still), both cameras side by side.
    assert 2 <= len(frames) <= 7 and frames[0].shape == (32, 64, 3)
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).mean() > 1.0
    # The run's own files are untouched; by default results go to RUN_DIR/evaluations.
    assert main(["evaluate", str(run_dir), "--checkpoint", "1", "--rollouts", "1", "--workers", "1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["tasks"][0]["rollouts"] == 1
    assert len(list((run_dir / "evaluations").glob("task00_best_*.json"))) == 1
    # Several runs (a sweep's): one result each, saved in each run, videos in a folder per run.
    other = tmp_path / "other_run"
    shutil.copytree(run_dir, other, ignore=shutil.ignore_patterns("evaluations"))
    assert main(["evaluate", str(run_dir), str(other), "--checkpoint", "1", "--rollouts", "1", "--workers", "1",
                 "--video", str(tmp_path / "both"), "--json"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert [Path(r["run_dir"]).name for r in both] == [run_dir.name, "other_run"]
    assert len(list((other / "evaluations").glob("task00_best_*.json"))) == 1
    assert {p.parent.parent.name for p in (tmp_path / "both").rglob("*.mp4")} == {run_dir.name, "other_run"}
    # Two runs of one name in different folders get numbered video folders.
    twin = tmp_path / "elsewhere" / run_dir.name
    shutil.copytree(run_dir, twin)
    assert main(["evaluate", str(run_dir), str(twin), "--checkpoint", "1", "--rollouts", "1", "--workers", "1",
                 "--video", str(tmp_path / "twins")]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "twins").iterdir()) == [f"1_{run_dir.name}", f"2_{run_dir.name}"]


def test_bad_input_is_named(run_dir, tmp_path, capsys):
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run_dir, unfinished)
    (unfinished / "final_policy.pt").unlink()
    (unfinished / "checkpoints" / "task01_best.pt").unlink()
    no_state = tmp_path / "no_state"
    shutil.copytree(run_dir, no_state)
    (no_state / "resume.pt").unlink()
    cases = [
        ([str(tmp_path)], "not a run directory"),
        ([str(run_dir), str(tmp_path)], "not a run directory"),
        ([str(run_dir), str(run_dir), "--out", str(tmp_path / "x.json")], "--out names one file"),
        ([str(unfinished)], "has not finished; stages kept so far: task00_best.pt"),
        ([str(unfinished), "--checkpoint", "2"], "no kept policy of task 2"),
        ([str(run_dir), "--checkpoint", "3"], "the run has tasks 1 to 2"),
        ([str(run_dir), "--checkpoint", "best"], "give 'final', 'latest', a task number from 1 to 2 or such a number "
                                                  "followed by ':last'"),
        ([str(run_dir), "--checkpoint", "final:last"], "':last' follows a task number from 1 to 2"),
        ([str(unfinished), "--checkpoint", "2:last"], "no kept policy of task 2"),
        ([str(no_state), "--checkpoint", "latest"], "has no resume.pt: the run has not saved an epoch yet"),
        ([str(run_dir), "--tasks", "stack_the_bowls"], "'stack_the_bowls' is not one of the run's tasks: 1 put_the"),
        ([str(run_dir), "--actions", "greedy"], "--actions greedy: give sampled or mode"),
    ]
    with pytest.raises(LiberoError, match="actions must be one of sampled, mode, got 'greedy'"):
        evaluate_run(run_dir, actions="greedy", log=lambda s: None)
    for args, words in cases:
        assert main(["evaluate", *args]) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, (args, err)


def test_packnet_final_policy_gives_each_task_its_own_network(tmp_path, smoke_data, smoke_envs, make_smoke_config):
    import torch

    from libero_ll.data.hdf5 import LOWDIM_SIZES
    from libero_ll.errors import LiberoError
    from libero_ll.evaluation.rollout import run_rollouts
    from libero_ll.experiments.checkpoint import load_policy_weights
    from libero_ll.experiments.config import policy_config
    from libero_ll.policies import make_policy

    cfg = make_smoke_config(tmp_path, smoke_data, *FAST, "learner.name=packnet")
    run = run_lifelong(cfg, log=lambda s: None, envs=smoke_envs)
    masked = Frames()
    evaluate_run(run, tasks=["1"], workers=1, recorder=masked, log=lambda s: None)
    # The final weights as they are (task 2's weights included) move the arm otherwise from the same states.
    first = smoke_envs[0]
    meta = {"image_shape": (32, 32, 3), "lowdim": LOWDIM_SIZES, "action_dim": 7, "task_emb_dim": 2}
    policy = make_policy("resnet_t", policy_config(cfg), meta)
    load_policy_weights(policy, run / "final_policy.pt")
    policy.eval()
    plain = Frames()
    with np.load(run / "init_states.npz") as f, torch.no_grad():
        run_rollouts(policy, first, f[list(cfg.tasks)[0]], np.eye(2, dtype=np.float32)[0], 2, 6,
                     int(cfg.eval.still_steps), recorder=plain, task=0)
    assert np.array_equal(plain.frames[(0, 0)][0], masked.frames[(0, 0)][0])
    assert not np.array_equal(plain.frames[(0, 0)][-1], masked.frames[(0, 0)][-1])
    # With two workers the tasks are rolled out one after another, each through its own network, as in one
    # process (all at once, task 2 would act through task 1's).
    alone, two = Frames(), Frames()
    evaluate_run(run, workers=1, recorder=alone, log=lambda s: None)
    evaluate_run(run, workers=2, recorder=two, log=lambda s: None)
    assert _same(alone, two, levels=2, share=0.01) and alone.ends == two.ends
    with pytest.raises(LiberoError, match="no other task's network"):
        evaluate_run(run, checkpoint="1", tasks=["2"], workers=1, log=lambda s: None)
    # The last saved state of the finished run is its final policy, task 1 through its own network too.
    latest = Frames()
    evaluate_run(run, checkpoint="latest", tasks=["1"], workers=1, recorder=latest, log=lambda s: None)
    assert _same(masked, latest)
    (run / "resume.pt").unlink()
    with pytest.raises(LiberoError, match="has no resume.pt"):
        evaluate_run(run, workers=1, log=lambda s: None)


def test_with_workers_every_task_is_in_flight_at_once_and_reported_when_done(run_dir, monkeypatch):
    """With two workers the policy in them, both tasks' rollouts go in one queue; each task is logged when its
    last rollout ends, the results come in task order, and a stop after the first task is done keeps that task.
    (That the rollouts are one process's is checked frame for frame above, with a recorder, and for a policy in
    the workers in test_parallel_eval.py.)"""
    from libero_ll.evaluation.vector_eval import ParallelEvaluator
    from libero_ll.experiments.evaluate import EvaluationInterrupted

    real = ParallelEvaluator.rollouts_many
    calls = []

    def spied(self, policy, jobs, *args, **kwargs):
        calls.append([job[0] for job in jobs])
        return real(self, policy, jobs, *args, **kwargs)

    monkeypatch.setattr(ParallelEvaluator, "rollouts_many", spied)
    lines = []
    together = evaluate_run(run_dir, rollouts=3, workers=2, log=lines.append)
    assert calls == [[0, 1]]
    assert [r.number for r in together.tasks] == [1, 2]
    done = [line for line in lines if line.startswith("task ")]
    assert len(done) == 2 and all(" after " in line and "/3 = " in line for line in done)
    assert all(len(r.outcomes) == 3 for r in together.tasks)
    # Stopped when the first task is reported: it is kept, marked, and the stop goes on.

    def stop_after_the_first(self, policy, jobs, *args, on_done=None, **kwargs):
        def reported(k, rollouts):
            on_done(k, rollouts)
            raise KeyboardInterrupt

        return real(self, policy, jobs, *args, on_done=reported, **kwargs)

    monkeypatch.setattr(ParallelEvaluator, "rollouts_many", stop_after_the_first)
    with pytest.raises(EvaluationInterrupted) as stopped:
        evaluate_run(run_dir, rollouts=3, workers=2, log=lambda s: None)
    kept = stopped.value.evaluation
    assert kept.interrupted and len(kept.tasks) == 1 and kept.tasks[0].rollouts == 3


def test_wilson_interval():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.490, abs=1e-3) and high == pytest.approx(0.943, abs=1e-3)
    low, high = wilson_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(0.722, abs=1e-3)


def _err_of(capsys, *args: str) -> str:
    """`libero-ll evaluate ARGS`'s error line: it must fail with exit 2, without a traceback."""
    assert main(["evaluate", *args]) == 2, args
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err, err
    return err


@pytest.fixture
def run_copy(run_dir, tmp_path) -> Path:
    """A copy of the module's run, to damage or edit."""
    run = tmp_path / "run"
    shutil.copytree(run_dir, run, ignore=shutil.ignore_patterns("evaluations"))
    return run


def test_a_damaged_checkpoint_is_named_without_torchs_advice(run_copy, capsys):
    from libero_ll.experiments.checkpoint import load_checkpoint

    run = run_copy
    # The file and what it is, not torch's advice to load it with weights_only=False (unsafe, and no help).
    (run / "final_policy.pt").write_bytes(bytes(range(256)) * 8)
    err = _err_of(capsys, str(run), "--workers", "1")
    assert f"{run / 'final_policy.pt'}: not a readable checkpoint (damaged or not written by libero_ll; " in err
    assert "weights_only" not in err and len(err.strip().splitlines()) == 1, err
    (run / "resume.pt").write_text("hello\n")  # what `train --resume` and --checkpoint latest read
    err = _err_of(capsys, str(run), "--checkpoint", "latest", "--workers", "1")
    assert f"{run / 'resume.pt'}: not a readable checkpoint (damaged or not written by libero_ll; " in err
    with pytest.raises(LiberoError, match="not a readable checkpoint") as caught:
        load_checkpoint(run / "resume.pt")
    assert "weights_only" not in str(caught.value)


def test_an_edited_policy_names_the_checkpoint_to_evaluate_not_init_from(run_copy, capsys):
    config = run_copy / "config.yaml"
    config.write_text(config.read_text().replace("embed_size: 16", "embed_size: 32"))
    err = _err_of(capsys, str(run_copy), "--workers", "1")
    assert f"checkpoint to evaluate {run_copy / 'final_policy.pt'}: the policy architecture does not match" in err
    assert "init_from" not in err and "policy.by_name.resnet_t.embed_size 32 (trained: 16)" in err


def test_a_learner_edited_after_the_run_is_named(run_copy, capsys):
    config = run_copy / "config.yaml"
    config.write_text(config.read_text().replace("  name: er\n", "  name: packnet\n"))
    # The final and a stage's checkpoint record the learner; the resume state (latest) is PackNet's or not.
    for checkpoint in ("final", "1", "latest"):
        err = _err_of(capsys, str(run_copy), "--checkpoint", checkpoint, "--workers", "1")
        assert "does not match its config's learner" in err and "packnet" in err, (checkpoint, err)


def test_scenes_edited_after_the_run_are_named(run_copy, capsys):
    # Rolled out at another image size (a policy of spatial features runs at any), it was measured on pictures it
    # never saw, without a word.
    from omegaconf import OmegaConf

    config = run_copy / "config.yaml"
    cfg = OmegaConf.load(config)
    trained = int(cfg.env.image_size)
    cfg.env.image_size = 2 * trained
    OmegaConf.save(cfg, config)
    for checkpoint in ("final", "1", "latest"):
        err = _err_of(capsys, str(run_copy), "--checkpoint", checkpoint, "--workers", "1")
        assert f"{config} sets env.image_size to {2 * trained}, but the run's saved policy " in err, (checkpoint, err)
        assert f"was trained with env.image_size {trained} " in err and f"set it back to {trained}" in err
    # A key the run's checkpoints do not record (added to the env settings since) is not a change.
    import torch

    cfg.env.image_size = trained
    OmegaConf.save(cfg, config)
    final = torch.load(run_copy / "final_policy.pt", weights_only=True)
    del final["config"]["env"]["robot_mesh"]
    torch.save(final, run_copy / "final_policy.pt")
    assert main(["evaluate", str(run_copy), "--workers", "1", "--rollouts", "1", "--tasks", "1",
                 "--out", str(run_copy / "e.json")]) == 0, capsys.readouterr().err


def test_an_encoder_edited_after_the_run_is_named(run_copy, capsys):
    """task_id:minilm and minilm are both 384 wide: the policy loaded and rolled out on vectors it never saw."""
    from omegaconf import OmegaConf

    config = run_copy / "config.yaml"
    cfg = OmegaConf.load(config)
    trained = str(cfg.language_encoder)
    cfg.language_encoder = "minilm" if trained != "minilm" else "task_id"
    OmegaConf.save(cfg, config)
    for checkpoint in ("final", "1", "latest"):
        err = _err_of(capsys, str(run_copy), "--checkpoint", checkpoint, "--workers", "1")
        assert (f"{config} sets language_encoder to '{cfg.language_encoder}', but the run's saved policy" in err
                and f"was trained with '{trained}'" in err), (checkpoint, err)


def test_damaged_initial_states_are_named(run_copy, capsys):
    (run_copy / "init_states.npz").write_bytes(b"\x80\x04" + bytes(100))
    err = _err_of(capsys, str(run_copy), "--workers", "1")
    assert f"{run_copy / 'init_states.npz'}: damaged" in err


def test_an_existing_out_file_is_kept_unless_overwrite(run_dir, tmp_path, capsys):
    out = tmp_path / "notes.json"
    out.write_text("my notes\n")
    args = [str(run_dir), "--tasks", "1", "--rollouts", "1", "--max-steps", "2", "--workers", "1", "--out", str(out)]
    err = _err_of(capsys, *args)
    assert f"--out {out} already exists" in err and "--overwrite" in err
    assert out.read_text() == "my notes\n"
    assert main(["evaluate", *args, "--overwrite"]) == 0
    assert json.loads(out.read_text())["tasks"][0]["number"] == 1


def test_video_folder_keeps_earlier_rollouts_unless_overwrite(run_dir, tmp_path, capsys):
    video = tmp_path / "video"
    args = [str(run_dir), "--tasks", "1", "--rollouts", "1", "--max-steps", "2", "--workers", "1", "--video", str(video)]
    assert main(["evaluate", *args]) == 0
    capsys.readouterr()
    task = video / "put_the_alphabet_soup_in_the_basket"
    first = sorted(p.name for p in task.iterdir())
    assert len(first) == 1 and first[0].startswith("rollout000_")
    # Videos of the same task are refused: an earlier rollout000_failure could end up beside a new _success.
    (task / "rollout005_success.mp4").write_bytes(b"an earlier, longer evaluation")
    err = _err_of(capsys, *args)
    assert f"video folder {video} already holds 2 rollout videos of put_the_alphabet_soup_in_the_basket" in err
    assert sorted(p.name for p in task.iterdir()) == sorted(first + ["rollout005_success.mp4"])
    # Another task's videos go beside them.
    assert main(["evaluate", *args[:2], "2", *args[3:]]) == 0
    assert len(list((video / "put_the_black_bowl_on_the_plate").glob("rollout000_*.mp4"))) == 1
    # --overwrite: the task's earlier videos are removed first, the other task's kept, and other files.
    (task / "my_edit.mp4").write_bytes(b"not a rollout")
    assert main(["evaluate", *args, "--overwrite"]) == 0
    assert sorted(p.name for p in task.iterdir()) == sorted(first + ["my_edit.mp4"])
    assert len(list((video / "put_the_black_bowl_on_the_plate").glob("rollout000_*.mp4"))) == 1
    # Several runs: every run's video folder is checked before the first rollout.
    other = tmp_path / "other"
    shutil.copytree(run_dir, other, ignore=shutil.ignore_patterns("evaluations"))
    both = tmp_path / "both"
    (both / other.name / "put_the_alphabet_soup_in_the_basket").mkdir(parents=True)
    (both / other.name / "put_the_alphabet_soup_in_the_basket" / "rollout000_failure.mp4").write_bytes(b"old")
    before = sorted((run_dir / "evaluations").glob("*.json")) if (run_dir / "evaluations").exists() else []
    err = _err_of(capsys, str(run_dir), str(other), "--tasks", "1", "--rollouts", "1", "--workers", "1",
                  "--video", str(both))
    assert "already holds 1 rollout video of put_the_alphabet_soup_in_the_basket" in err
    assert not (both / run_dir.name).exists()
    assert sorted((run_dir / "evaluations").glob("*.json")) == before


def test_a_stopped_evaluation_keeps_the_tasks_it_evaluated(run_dir, tmp_path, monkeypatch, capsys):
    """Ctrl-C in the second task: the first task's rollouts are written, marked interrupted, and the command
    stops as interrupted (before, nothing was written and they were only in the log)."""
    import libero_ll.evaluation.rollout as rollout

    real = rollout.run_rollouts
    calls = []

    def stopped_in_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(rollout, "run_rollouts", stopped_in_the_second)
    out = tmp_path / "stopped.json"
    assert main(["evaluate", str(run_dir), "--rollouts", "1", "--workers", "1", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert f"the 1 task evaluated before the stop (1) is written to {out}, marked interrupted" in err
    saved = json.loads(out.read_text())
    assert saved["interrupted"] is True and [t["number"] for t in saved["tasks"]] == [1]
    assert err.splitlines()[-1] == "interrupted"
    # Stopped before any task: nothing to keep, nothing written.
    calls.clear()
    calls.append(1)
    args = ["evaluate", str(run_dir), "--rollouts", "1", "--workers", "1", "--out", str(tmp_path / "n.json")]
    assert main(args) == 130
    assert not (tmp_path / "n.json").exists()
