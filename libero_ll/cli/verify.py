"""`libero-ll verify`: replay demo files in the simulator and report the demos that do not replay."""

from __future__ import annotations

from pathlib import Path

from libero_ll.errors import LiberoError


def cmd_verify(args) -> int:
    from libero_ll.data.hdf5 import demo_files, read_info
    from libero_ll.data.verify import REPLAY_TOLERANCE, verify_file

    tolerance = REPLAY_TOLERANCE if args.tolerance is None else args.tolerance
    if not tolerance >= 0:  # also NaN, which no divergence would ever pass
        raise LiberoError(f"--tolerance must be a number >= 0, got {tolerance}")
    if args.max_demos is not None and args.max_demos < 1:
        raise LiberoError(f"--max-demos must be at least 1, got {args.max_demos}")
    # A folder stands for its demo files (*.hdf5, in name order).
    files = [str(f) for path in args.files for f in (demo_files(path) if Path(path).is_dir() else [path])]
    # Every file is opened before any replay, so that a typo fails at once; a file that is there but cannot be
    # read (damaged) is a failed file below, and the others are verified.
    for path in files:
        try:
            read_info(path)
        except LiberoError:
            if not Path(path).is_file():
                raise
    failed: list[str] = []
    total = bad_demos = 0
    worst = 0.0
    for path in files:
        print(path, flush=True)
        try:
            report = verify_file(
                path, tolerance, args.max_demos, on_demo=lambda r: print(f"  {r.describe()}", flush=True)
            )
        except LiberoError as e:
            # One file that cannot be replayed (no scene to rebuild, say) is a failed file; the others go on.
            print(f"  FAILED: {e}", flush=True)
            failed.append(f"{path} (cannot be replayed)")
            continue
        total += len(report.demos)
        worst = max([worst, *(d.max_divergence for d in report.demos)])
        if not report.demos:
            print("  FAILED: the file holds no demos")
            failed.append(f"{path} (no demos)")
        failed += [f"{path}:{d.name}" for d in report.failed]
        bad_demos += len(report.failed)
    n_files = len(files)
    print(
        f"verified {total} demos in {n_files} file{'s' if n_files != 1 else ''}: {total - bad_demos} replay "
        f"within {tolerance:g} and reach the goal, {bad_demos} failed; max divergence {worst:.2e}"
    )
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    return 0


def register(sub) -> None:
    s = sub.add_parser(
        "verify",
        help="replay demo files and check that they reproduce their states and reach the goal",
        description="For every demo: rebuild the scene from the file's task text, reset to the demo's "
        "initial state, apply its actions and compare the simulator's state with the stored states "
        "(positions: time, joints, fixture poses). Exit 0 when every demo stays within the tolerance and "
        "ends with the goal holding, 1 otherwise (the failing demos are listed).",
    )
    s.add_argument("files", nargs="+", help="HDF5 demo files, or folders of them (their *.hdf5 files)")
    s.add_argument(
        "--tolerance", type=float,
        help="largest state divergence allowed, m or rad "
        "(default: REPLAY_TOLERANCE of libero_ll/data/verify.py, 1e-4)",
    )
    s.add_argument("--max-demos", type=int, help="check only the first N demos of each file")
    s.set_defaults(func=cmd_verify)
