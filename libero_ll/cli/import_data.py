"""`libero-ll import`: another tool's dataset (LeRobot's) in as demo files, one per task."""

from __future__ import annotations

from libero_ll.cli.args import at_least

# Formats a dataset can be read from; LeRobot's is the one so far.
FORMATS = ("lerobot",)


def cmd_import(args) -> int:
    from libero_ll.cli.args import output_folder
    from libero_ll.data.lerobot_import import import_lerobot
    from libero_ll.errors import LiberoError
    from libero_ll.experiments.lifelong import suite_tasks

    if args.skip_unknown and not args.suite:
        raise LiberoError("--skip-unknown leaves out the tasks that --suite does not have; give --suite too")
    if bool(args.agentview) != bool(args.wrist):
        raise LiberoError("name both cameras (--agentview FEATURE --wrist FEATURE) or neither")
    output_folder(args.out, "--out")
    cameras = {"agentview_rgb": args.agentview, "eye_in_hand_rgb": args.wrist} if args.agentview else None
    s = import_lerobot(
        args.dataset,
        args.out,
        task_files=suite_tasks(args.suite) if args.suite else None,
        flip=args.flip,
        image_size=args.image_size,
        cameras=cameras,
        skip_unknown=args.skip_unknown,
        overwrite=args.overwrite,
        progress=not args.quiet,
        suite=args.suite,
    )
    for task, path in s.files.items():
        print(f"  {path.name}: {task}")
    if s.skipped:
        left, tasks = sum(s.skipped.values()), len(s.skipped)
        print(f"  left out: {left} episode{'s' if left != 1 else ''} of {tasks} task{'s' if tasks != 1 else ''} "
              f"that suite {args.suite} does not have")
    print(
        f"{s.path}: {s.episodes} episode{'s' if s.episodes != 1 else ''}, {s.frames} "
        f"frame{'s' if s.frames != 1 else ''} of a LeRobot dataset ({s.version}) in {len(s.files)} demo "
        f"file{'s' if len(s.files) != 1 else ''}, {s.seconds:.1f} s"
    )
    return 0


def register(sub) -> None:
    s = sub.add_parser("import", help="read a LeRobot dataset into demo files, one per task")
    s.add_argument("dataset", help="the dataset's folder (holding meta/info.json)")
    s.add_argument("--format", default="lerobot", choices=FORMATS, help="input format: lerobot (v2.0 to v3.0)")
    s.add_argument("--out", required=True, help="folder for the demo files (<task>.hdf5)")
    s.add_argument(
        "--suite",
        help="name each file after the task of this suite (a name or a folder of .bddl files) whose instruction "
        "is the episode's task (default: a file name made from the instruction)",
    )
    s.add_argument(
        "--skip-unknown",
        action="store_true",
        help="with --suite, leave out the episodes of tasks the suite does not have (a dataset of several suites)",
    )
    s.add_argument(
        "--flip",
        metavar="rows|columns|both",
        help="flip the pictures upside down (rows), left to right (columns) or both (a 180-degree turn) to "
        "make them upright; LeRobot's LIBERO datasets: columns (docs/interop.md)",
    )
    s.add_argument(
        "--image-size",
        type=at_least(1),
        metavar="N",
        help="resize the pictures to N x N pixels (LeRobot's LIBERO datasets hold 256; the paper preset "
        "reads 128, the cpu preset 48)",
    )
    s.add_argument("--agentview", metavar="FEATURE", help="the dataset's feature of the agentview camera")
    s.add_argument("--wrist", metavar="FEATURE", help="the dataset's feature of the wrist camera")
    s.add_argument("--overwrite", action="store_true", help="replace demo files already in --out")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_import)
