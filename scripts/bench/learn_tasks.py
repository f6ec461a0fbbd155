"""Does a preset learn? Several tasks, each learnt alone and all at once, success read at their evaluations.

Issue-style check of a preset's learning: each task is the first (and only) stage of a run of its own, the runs
go on side by side (on a GPU they share it; their evaluations share the cores), and each run is stopped once its
evaluation at epoch ``--until`` is in (the learning-rate schedule stays the config's, e.g. the paper's 50-epoch
cosine), or at ``--deadline`` seconds after the script began. The demos are collected first, once for all the
tasks, by one process per core (``data.dir`` keeps them; demos already there are used). Prints each task's
success at every evaluation and whether every task reached ``--target`` within ``--until`` epochs, and writes
the same with each run's log and success.json under OUT.

Meant for a machine with cores and a GPU to share among the runs. On 2 CPU cores three cpu-preset runs at once
crawl: their epoch-0 evaluations (20 sampled rollouts of up to 600 steps each) took about 280 s, and then each epoch
about 110 s per run, where one run alone took about 75 s and 6 s.

    # on a GPU: the paper preset on three libero_object tasks, 20 sampled rollouts at epochs 0, 5 and 10
    python scripts/bench/learn_tasks.py configs/paper.yaml OUT language_encoder=task_id
    # small, on a CPU
    python scripts/bench/learn_tasks.py configs/cpu.yaml OUT --until 2 train.epochs=2 eval.every=1 \\
        eval.rollouts=2 eval.max_steps=20 data.demos_per_task=2

Usage: python scripts/bench/learn_tasks.py CONFIG OUT [--tasks T ...] [--until E] [--target S] [--deadline SECONDS]
    [--work DIR] [key=value ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# LIBERO-Object's three tasks measured since the paper preset's first runs (docs/policies.md, "Rollout success
# measured"): the soup's demos are the suite's longest, the bbq sauce the one sampled actions miss most.
DEFAULT_TASKS = [
    "pick_up_the_alphabet_soup_and_place_it_in_the_basket",
    "pick_up_the_bbq_sauce_and_place_it_in_the_basket",
    "pick_up_the_butter_and_place_it_in_the_basket",
]


def read_curve(run_dir: Path) -> list[tuple[int, float]]:
    """(epoch, success) at each evaluation of the run's only task so far; [] before its first one is in."""
    try:
        saved = json.loads((run_dir / "success.json").read_text(encoding="utf-8"))
        return [(int(e), float(v)) for e, v in zip(saved["eval_epochs"][0], saved["curves"][0])]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return []


def verdict(curves: dict[str, list[tuple[int, float]]], until: int, target: float) -> tuple[bool, list[str]]:
    """Whether every task reached `target` at an evaluation of epoch `until` or earlier, and a line per task."""
    lines, every = [], True
    for task, curve in curves.items():
        points = " ".join(f"{e}:{v:.2f}" for e, v in curve) or "no evaluation"
        best = max((v for e, v in curve if e <= until), default=None)
        reached = best is not None and best >= target
        seen = any(e >= until for e, _ in curve)
        every &= reached
        why = ("reached" if reached else "not reached" if seen else f"not reached, epoch {until} not evaluated")
        lines.append(f"  {task}: {points}  (best by epoch {until}: "
                     f"{'-' if best is None else f'{best:.2f}'}; {why})")
    return every, lines


def run_dir_of(root: Path) -> Path | None:
    dirs = sorted((d for d in root.glob("*/") if (d / "config.yaml").exists()), key=lambda d: d.stat().st_mtime)
    return dirs[-1] if dirs else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("config", type=Path, help="YAML config, e.g. configs/paper.yaml")
    p.add_argument("out", type=Path, help="folder for the summary, each run's log and success.json")
    p.add_argument("overrides", nargs="*", help="key=value overrides for every run, e.g. language_encoder=task_id")
    p.add_argument("--suite", default="libero_object")
    p.add_argument("--tasks", nargs="+", default=DEFAULT_TASKS, help="task names in the suite (default: three "
                   "libero_object tasks)")
    p.add_argument("--until", type=int, default=10, help="stop each run once its evaluation at this epoch is in "
                   "(default 10)")
    p.add_argument("--target", type=float, default=0.9, help="success each task should reach (default 0.9)")
    p.add_argument("--deadline", type=float, default=560.0, help="stop every run this many seconds after the "
                   "script began (default 560, within a 10-minute device call)")
    p.add_argument("--work", type=Path, default=Path("/tmp/learn_tasks"), help="holds the demos (unless data.dir "
                   "is given) and the runs (default /tmp/learn_tasks)")
    p.add_argument("--python", default=sys.executable)
    a = p.parse_intermixed_args(argv)
    start = time.time()
    a.out.mkdir(parents=True, exist_ok=True)
    if any(o.split("=", 1)[0].strip() in ("tasks", "suite", "output_dir") for o in a.overrides):
        print("error: give the tasks with --tasks and the suite with --suite; output_dir is under --work",
              file=sys.stderr)
        return 2
    if not any(o.split("=", 1)[0].strip() == "data.dir" for o in a.overrides):
        a.overrides.append(f"data.dir={a.work / 'demos'}")
    summary = open(a.out / "learn.log", "a", encoding="utf-8")

    def say(line: str) -> None:
        print(line, flush=True)
        summary.write(line + "\n")
        summary.flush()

    sys.path.insert(0, str(REPO))
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.config import load_config
    from libero_ll.experiments.lifelong import suite_tasks

    try:
        cfg = load_config(a.config, a.overrides + [f"suite={a.suite}"])
        suite_tasks(a.suite, a.tasks)  # an unknown or repeated name fails here, naming the known ones
    except LiberoError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cores = os.cpu_count() or 1
    say(f"learn_tasks: {a.config} {' '.join(a.overrides)}; suite {a.suite}; {len(a.tasks)} tasks at once, each "
        f"stopped after its epoch-{a.until} evaluation; {cores} cores")

    collect = [a.python, "-m", "libero_ll.cli", "collect", "--suite", a.suite, "--tasks", *a.tasks,
               "--demos", str(int(cfg.data.demos_per_task)), "--image-size", str(int(cfg.env.image_size)),
               "--robot-mesh", str(cfg.env.robot_mesh), "--max-steps", str(int(cfg.data.expert_max_steps)),
               "--seed", str(int(cfg.data.collect_seed)), "--workers", str(cores), "--out", str(cfg.data.dir)]
    t = time.time()
    with open(a.out / "collect.log", "w", encoding="utf-8") as f:
        try:
            rc = subprocess.call(collect, cwd=REPO, stdout=f, stderr=subprocess.STDOUT,
                                 timeout=max(1.0, a.deadline - (time.time() - start)))
        except subprocess.TimeoutExpired:
            rc = "none: stopped at the deadline"
    say(f"demos: libero-ll {shlex.join(collect[3:])} -> exit {rc} in {time.time() - t:.1f} s (collect.log)")
    if rc != 0:
        return 1

    per_run = max(1, cores // len(a.tasks))
    runs: dict[str, tuple[subprocess.Popen, Path]] = {}
    for task in a.tasks:
        root = a.work / "runs" / task
        root.mkdir(parents=True, exist_ok=True)
        cmd = [a.python, "-m", "libero_ll.cli", "train", str(a.config), *a.overrides, f"suite={a.suite}",
               f"tasks=[{task}]", f"output_dir={root}", f"eval.workers={per_run}", "eval.envs_per_worker=5"]
        log = open(a.out / f"{task}.log", "w", encoding="utf-8")
        runs[task] = (subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT), root)
    say(f"training: {len(runs)} runs of `libero-ll {shlex.join(cmd[3:5])} ... tasks=[T] eval.workers={per_run} "
        "eval.envs_per_worker=5` at once (each task's .log)")

    curves: dict[str, list[tuple[int, float]]] = {task: [] for task in a.tasks}
    stopped: dict[str, str] = {}
    while len(stopped) < len(runs):
        time.sleep(5)
        late = time.time() - start > a.deadline
        for task, (proc, root) in runs.items():
            if task in stopped:
                continue
            run = run_dir_of(root)
            curves[task] = read_curve(run) if run else []
            if proc.poll() is not None:
                stopped[task] = f"ended (exit {proc.returncode}) at {time.time() - start:.0f} s"
            elif any(e >= a.until for e, _ in curves[task]) or late:
                proc.send_signal(signal.SIGTERM)
                stopped[task] = (f"stopped at {time.time() - start:.0f} s "
                                 f"({'the deadline' if late else f'epoch {a.until} evaluated'})")
    for task, (proc, root) in runs.items():
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        run = run_dir_of(root)
        if run:
            curves[task] = read_curve(run)
            if (run / "success.json").exists():
                (a.out / f"{task}.success.json").write_bytes((run / "success.json").read_bytes())
        say(f"  {task}: {stopped[task]}; run {run}")

    ok, lines = verdict(curves, a.until, a.target)
    say(f"success at each evaluation (epoch:success), {int(cfg.eval.rollouts)} rollouts each:")
    for line in lines:
        say(line)
    say(f"every task at {a.target} or more within {a.until} epochs: {'yes' if ok else 'no'} "
        f"({time.time() - start:.0f} s in all)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
