"""Wall time of learning one task end to end, as `libero-ll train` learns it, split into its parts.

One lifelong run of the config restricted to one task (``--task``, else the config's first task) is made
by the library's run function, and the time of the whole call is split into demos (collecting the missing
ones and loading them), training (epochs, checkpoints, end-of-stage work), evaluation (every evaluation
point's rollouts, the start of evaluation workers included) and the rest (language model, policy,
environments, initial states). Overrides are the ``key=value`` ones `libero-ll train` accepts, so the same
script runs small on a CPU and at the paper's protocol on a GPU:

    python scripts/bench/task_time.py configs/cpu.yaml train.epochs=1 data.demos_per_task=2 \\
        eval.rollouts=2 eval.max_steps=20 output_dir=/tmp/runs data.dir=/tmp/demos
    python scripts/bench/task_time.py configs/paper.yaml   # 50 demos, 50 epochs, eval every 5, 20 rollouts

A run directory is written under ``output_dir`` as by any run; demos already in ``data.dir`` are loaded,
not collected (the report says which).

Usage: python scripts/bench/task_time.py [CONFIG] [--task NAME] [key=value ...]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def evaluation_points(epochs: int, every: int) -> int:
    """Evaluations of a task's stage: epoch 0, every `every` epochs, and the last epoch."""
    every = max(1, every)
    return 1 + sum(1 for e in range(1, epochs + 1) if e % every == 0 or e == epochs)


def device_name(cfg) -> str:
    """The device the run trains on, in words (`device=auto` takes the GPU when there is one)."""
    import torch

    name = str(cfg.device)
    if name in ("auto", "cuda") and torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name()})"
    return f"{name if name != 'auto' else 'cpu'} ({int(cfg.num_threads)} torch threads)"


def run(config: Path, task: str | None, overrides: list[str]) -> None:
    from libero_ll.data.hdf5 import task_demo_file
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.config import load_config
    from libero_ll.experiments.lifelong import resolve_workers, run_lifelong, suite_tasks

    if any(o.split("=", 1)[0].strip() == "tasks" for o in overrides):
        raise LiberoError("give the task with --task NAME, not a tasks= override")
    cfg = load_config(config, overrides)
    names = [t.stem for t in suite_tasks(cfg.suite, list(cfg.tasks) if cfg.tasks else None)]
    task = task or names[0]
    suite_tasks(cfg.suite, [task])  # an unknown name fails here, naming the known ones
    cfg.tasks = [task]

    demo_file = task_demo_file(cfg.data.dir, task)
    demos = "loaded" if demo_file.exists() else "collected and loaded"
    epochs, every, rollouts = int(cfg.train.epochs), int(cfg.eval.every), int(cfg.eval.rollouts)
    workers = resolve_workers(int(cfg.eval.workers), rollouts)
    what = (f"config {config}, task {task} (suite {cfg.suite}), "
            f"learner {cfg.learner.name}, policy {cfg.policy.name}")
    scale = (f"{int(cfg.data.demos_per_task)} demos, {epochs} epochs, eval every {every} "
             f"({evaluation_points(epochs, every)} evaluations), {rollouts} rollouts of at most "
             f"{int(cfg.eval.max_steps)} steps, {workers} eval worker{'s' if workers > 1 else ''}, "
             f"{int(cfg.env.image_size)} px, device {device_name(cfg)}")
    settings = [what, scale]
    timings: dict = {}
    epoch_lines: list[tuple[float, str]] = []

    def log(line: str) -> None:
        print(f"  {line}", flush=True)
        if EPOCH_LINE.match(line):
            epoch_lines.append((time.time(), line))

    t0 = time.time()
    run_dir = run_lifelong(cfg, log=log, timings=timings)
    wall = time.time() - t0
    other = timings["total"] - timings["demos"] - timings["train"] - timings["eval"]
    rows = [
        (f"demos ({demos})", timings["demos"]),
        ("training", timings["train"]),
        ("evaluation" + (" (waited for)" if "eval_alongside" in timings else ""), timings["eval"]),
        ("setup and other", other),
        ("whole task", timings["total"]),
    ]
    print()
    print("task time: " + "\n  ".join(settings))
    for label, seconds in rows:
        print(f"  {label:<28} {seconds:9.1f} s  {100 * seconds / max(timings['total'], 1e-9):5.1f}%")
    if "eval_alongside" in timings:
        print(f"  (evaluation alongside training, eval.overlap: {timings['eval_alongside']:.1f} s of the "
              "evaluation process's work)")
    pace = epoch_pace(epoch_lines, run_dir / "resources.json", epochs)
    if pace:
        print(f"  {pace}")
    print(f"  (wall time of the call {wall:.1f} s; run directory {run_dir})")


# A training epoch's log line: "stage S epoch E: loss L ... (Ts)", T the seconds since the stage began.
EPOCH_LINE = re.compile(r"^stage \d+ epoch (\d+): loss .*\((\d+)s\)$")


def epoch_pace(lines: list[tuple[float, str]], resources: Path, epochs: int) -> str | None:
    """When the first epoch ended (compiling, with train.compile, happens in it) and the median time of the later
    ones, with the training windows per second that makes, from the epoch lines of the log (time seen, line) and
    the run's resources.json (the windows trained). None with fewer than three epochs."""
    import json
    import statistics

    if len(lines) < 3:
        return None
    first = float(EPOCH_LINE.match(lines[0][1]).group(2))
    later = statistics.median(b - a for (a, _), (b, _) in zip(lines, lines[1:]))
    text = (f"epochs: the first ended {first:.0f} s into the stage (after the epoch-0 evaluation unless "
            f"eval.overlap), the later ones took {later:.2f} s each (median)")
    try:
        seen = sum(t["samples_seen"] for t in json.loads(resources.read_text(encoding="utf-8"))["tasks"])
    except (OSError, ValueError, KeyError, TypeError):
        return text
    return text + f", {seen / epochs / later:,.0f} training windows/s"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("config", nargs="?", type=Path, default=REPO / "configs" / "cpu.yaml",
                   help="YAML config (default: configs/cpu.yaml)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. train.epochs=2 eval.rollouts=4")
    p.add_argument("--task", help="the task to learn (default: the config's first task)")
    a = p.parse_intermixed_args(argv)
    if "=" in str(a.config):  # only overrides were given: they apply to the default config
        a.overrides, a.config = [str(a.config), *a.overrides], REPO / "configs" / "cpu.yaml"

    from libero_ll.errors import LiberoError

    try:
        run(a.config, a.task, a.overrides)
    except LiberoError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
