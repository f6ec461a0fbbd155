"""Measure the scripted expert's success rate on the benchmark tasks and write the table to the docs.

Each task is run once per seed, seeds drawn exactly as demo collection draws first attempts
(`demo_seed(task, index, 0, seed=0)` for index in range(N)), with rendering off. Results are cached
per (task, seed index) in a JSON-lines file, keyed by a fingerprint of the expert's, models' and
environment's source and one of each task's files, so an interrupted run continues where it
stopped and a changed expert, model or task is measured afresh.

    .venv/bin/python scripts/expert_success.py                       # all five suites, 20 seeds
    .venv/bin/python scripts/expert_success.py --suite libero_goal --seeds 5 --workers 2
    .venv/bin/python scripts/expert_success.py --tasks KITCHEN_SCENE3_turn_on_the_stove --seeds 3

`--folder DIR` (repeatable) measures the task files of a folder instead, e.g. random generated tasks
(`libero-ll generate --random 30 --seed 1 --out DIR --no-init-states`); a task name found in several folders is
measured once. Its table is printed, and written only to an `--out` given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("MUJOCO_GL", "osmesa")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])

SUITES = ["libero_spatial", "libero_object", "libero_goal", "libero_90", "libero_10"]
DEFAULT_CACHE = REPO / "datasets" / "expert_success_cache.jsonl"


# What an episode's outcome depends on besides the task's own files: the expert, the models and the
# simulation (whole packages), and the two functions of collection an episode runs through (how its seed is
# drawn and how it is started and stepped). The rest of collect.py (workers, files, resuming) does not change
# an outcome, so a change there does not void the measured table.
FINGERPRINTED = ["libero_ll/experts", "libero_ll/assets", "libero_ll/envs"]
FINGERPRINTED_FUNCTIONS = {"libero_ll/data/collect.py": ["demo_seed", "run_expert_episode"]}


def _function_sources(path: Path, names: list[str]) -> bytes:
    """The source text of the named top-level functions of a file, in the order given, read without importing."""
    import ast

    text = path.read_text()
    found = {n.name: ast.get_source_segment(text, n) for n in ast.parse(text).body
             if isinstance(n, ast.FunctionDef) and n.name in names}
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"{path.relative_to(REPO)} has no function {', '.join(missing)}: update "
                         "FINGERPRINTED_FUNCTIONS in scripts/expert_success.py")
    return "\n".join(found[n] for n in names).encode()


def expert_fingerprint() -> str:
    """A short hash of the expert's, models' and environment's source: other code's results are not reused."""
    h = hashlib.sha256()
    for entry in FINGERPRINTED:
        path = REPO / entry
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(str(f.relative_to(REPO)).encode())
            h.update(f.read_bytes())
    for entry, names in FINGERPRINTED_FUNCTIONS.items():
        h.update(entry.encode())
        h.update(_function_sources(REPO / entry, names))
    return h.hexdigest()[:12]


def task_fingerprint(task_file: str) -> str:
    """A short hash of a task's BDDL file and its stored initial states: a changed task is measured afresh."""
    h = hashlib.sha256()
    path = Path(task_file)
    for f in sorted(path.parent.glob(path.stem + ".*")):
        if f.is_file():
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def run_task(
    suite: str,
    task_name: str,
    task_file: str,
    indices: list[int],
    max_steps: int,
    fingerprint: str,
    task_sha: str,
) -> list[dict]:
    """Run the expert on one task for the given seed indices; one result dict per episode.

    Args:
        fingerprint, task_sha: the code's and the task files' fingerprints, recorded with each result.
    """
    from libero_ll.data.collect import demo_seed, run_expert_episode
    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(task_file, EnvConfig(render=False))
    goal = env.spec.goal_predicates()
    out = []
    try:
        for index in indices:
            seed = demo_seed(task_name, index, 0, seed=0)
            t0 = time.perf_counter()
            try:
                success, _ = run_expert_episode(env, seed, max_steps, record=False)
                error = ""
            except Exception as e:  # a planner error is a failure of that task, not of the whole run
                success, error = False, f"{type(e).__name__}: {e}"
            failed = [] if success or error else [text for text, ok in env.predicate_values(goal) if not ok]
            out.append(
                {
                    "suite": suite,
                    "task": task_name,
                    "index": index,
                    "seed": seed,
                    "max_steps": max_steps,
                    "expert": fingerprint,
                    "task_file": task_sha,
                    "success": bool(success),
                    "length": int(env.steps),
                    "seconds": round(time.perf_counter() - t0, 2),
                    "unmet": failed,
                    "error": error,
                }
            )
    finally:
        env.close()
    return out


def load_cache(
    path: Path, fingerprint: str, max_steps: int, task_files: dict[str, str]
) -> dict[tuple[str, int], dict]:
    """Cached results of this code, episode cap and task files, by (task, seed index).

    Args:
        task_files: task name -> `task_fingerprint` of its files now. A torn last line is skipped.
    """
    results: dict[tuple[str, int], dict] = {}
    if not path.exists():
        return results
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if r.get("expert") == fingerprint and r.get("max_steps") == max_steps:
            if task_files.get(r["task"]) == r.get("task_file"):
                results[(r["task"], r["index"])] = r
    return results


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def table(
    tasks: list[tuple[str, str]], results: dict, n: int, command: str, fingerprint: str, max_steps: int
) -> str:
    """The Markdown report: per-task rows, then a summary per suite and overall."""
    lines = [
        "# Scripted expert success rates",
        "",
        f"Generated by `scripts/expert_success.py` (code fingerprint `{fingerprint}`) with:",
        "",
        "```",
        command,
        "```",
        "",
        f"Each task is run from {n} sampled starts, the seeds of the first collection attempts "
        f"(`demo_seed(task, i, 0, seed=0)`, i < {n}), with rendering off and an episode cap of "
        f"{max_steps} steps. Lengths are policy steps (20 Hz) of the successful episodes.",
        "",
        "| suite | task | successes | rate | mean length |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    per_suite: dict[str, list[int]] = {}
    below = []
    for suite, name in tasks:
        rs = [results[(name, i)] for i in range(n) if (name, i) in results]
        ok = [r for r in rs if r["success"]]
        rate = len(ok) / len(rs) if rs else float("nan")
        mean_len = sum(r["length"] for r in ok) / len(ok) if ok else float("nan")
        s = per_suite.setdefault(suite, [0, 0, 0, 0])
        s[0] += len(ok)
        s[1] += len(rs)
        s[2] += 1
        s[3] += int(bool(rs) and rate >= 0.9)
        if rs and rate < 0.9:
            below.append((suite, name, rate))
        length = f"{mean_len:.0f}" if ok else "–"
        lines.append(f"| {suite} | {name} | {len(ok)}/{len(rs)} | {rate:.0%} | {length} |")
    lines += ["", "## Summary", "", "| suite | episodes | success rate | tasks at 90% or more |"]
    lines.append("| --- | ---: | ---: | ---: |")
    tot = [0, 0, 0, 0]
    for suite, (k, m, t, good) in per_suite.items():
        lines.append(f"| {suite} | {m} | {k / max(m, 1):.1%} | {good}/{t} |")
        tot = [a + b for a, b in zip(tot, (k, m, t, good))]
    lines.append(f"| **all** | {tot[1]} | {tot[0] / max(tot[1], 1):.1%} | {tot[3]}/{tot[2]} |")
    if below:
        lines += ["", "Tasks below 90%: " + ", ".join(f"{n} ({r:.0%})" for _, n, r in below) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--suite", action="append", choices=SUITES, help="a suite to measure (repeatable; default all five)"
    )
    ap.add_argument("--folder", action="append", type=Path, default=[],
                    help="a folder of task files to measure instead of the suites (repeatable)")
    ap.add_argument("--tasks", nargs="+", help="only these task names (within the chosen suites or folders)")
    ap.add_argument("--seeds", type=int, default=20, help="episodes per task (default 20)")
    ap.add_argument("--max-steps", type=int, default=600, help="episode cap, policy steps (default 600)")
    ap.add_argument("--workers", type=int, default=1, help="parallel worker processes (default 1)")
    ap.add_argument(
        "--out", type=Path, default=None,
        help="the Markdown table to write (default docs/expert_success.md; none with --folder)",
    )
    ap.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help="JSON-lines file of results, for resuming"
    )
    ap.add_argument("--no-write", action="store_true", help="measure and print, but do not write the table")
    args = ap.parse_args(argv)
    given = argv if argv is not None else sys.argv[1:]
    command = "python scripts/expert_success.py " + " ".join(shlex.quote(a) for a in given)

    from libero_ll.tasks.registry import get_suite

    if args.folder and args.suite:
        ap.error("give --suite or --folder, not both")
    suites = args.suite or ([] if args.folder else SUITES)
    tasks = []
    for s in suites:
        for t in get_suite(s):
            if not args.tasks or t.name in args.tasks:
                tasks.append((s, t.name, str(t.file)))
    seen = set()
    for folder in args.folder:
        files = sorted(folder.glob("*.bddl")) if folder.is_dir() else []
        if not files:
            ap.error(f"--folder {folder}: {'no .bddl files in it' if folder.is_dir() else 'not a folder'}")
        for f in files:
            if f.stem not in seen and (not args.tasks or f.stem in args.tasks):
                seen.add(f.stem)
                tasks.append((folder.name, f.stem, str(f)))
    if args.out is None and not args.folder:
        args.out = REPO / "docs" / "expert_success.md"
    if args.tasks:
        missing = set(args.tasks) - {name for _, name, _ in tasks}
        if missing:
            where = ", ".join([*suites, *(str(f) for f in args.folder)])
            ap.error(f"unknown task(s) in {where}: {', '.join(sorted(missing))}")

    fingerprint = expert_fingerprint()
    task_files = {name: task_fingerprint(file) for _, name, file in tasks}
    results = load_cache(args.cache, fingerprint, args.max_steps, task_files)
    # A task name appears in one suite only, but the same scene can run in several: key by name.
    todo = []
    for s, name, file in tasks:
        indices = [i for i in range(args.seeds) if (name, i) not in results]
        if indices:
            todo.append((s, name, file, indices))
    n_eps = sum(len(t[3]) for t in todo)
    cached = len(results)
    print(f"expert {fingerprint}: {len(tasks)} tasks, {n_eps} episodes to run ({cached} cached)", flush=True)

    args.cache.parent.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    done_eps = 0

    def record(rs: list[dict]) -> None:
        nonlocal done_eps
        with args.cache.open("a") as f:
            for r in rs:
                f.write(json.dumps(r) + "\n")
        for r in rs:
            results[(r["task"], r["index"])] = r
        done_eps += len(rs)
        ok = sum(r["success"] for r in rs)
        secs = sum(r["seconds"] for r in rs) / max(len(rs), 1)
        unmet = sorted({u for r in rs for u in r["unmet"]} | {r["error"] for r in rs if r["error"]})
        print(
            f"[{done_eps}/{n_eps} {time.time() - t_start:.0f}s] {rs[0]['suite']}/{rs[0]['task']}: "
            f"{ok}/{len(rs)} ({secs:.1f} s/episode)" + (f"  unmet: {'; '.join(unmet)}" if unmet else ""),
            flush=True,
        )

    jobs = [
        (s, name, file, idx, args.max_steps, fingerprint, task_files[name]) for s, name, file, idx in todo
    ]
    if args.workers <= 1:
        for job in jobs:
            record(run_task(*job))
    else:
        with ProcessPoolExecutor(args.workers) as pool:
            futures = [pool.submit(run_task, *job) for job in jobs]
            for fut in as_completed(futures):
                record(fut.result())

    report = table([(s, n) for s, n, _ in tasks], results, args.seeds, command, fingerprint, args.max_steps)
    summary = report.split("## Summary", 1)[1]
    print(summary.strip())
    if not args.no_write and args.out is not None:
        write_atomic(args.out, report)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
