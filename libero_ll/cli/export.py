"""`libero-ll export`: demo files out in another tool's dataset format (LeRobot's)."""

from __future__ import annotations

from pathlib import Path

from libero_ll.cli.args import at_least, output_folder
from libero_ll.errors import LiberoError

# Formats a dataset can be written in; LeRobot's is the one so far.
FORMATS = ("lerobot",)


def cmd_export(args) -> int:
    from libero_ll.data.lerobot import VIDEO_CODECS, VideoOptions, export_lerobot

    if args.vcodec not in VIDEO_CODECS:
        raise LiberoError(f"unknown video codec {args.vcodec!r}; known: {', '.join(VIDEO_CODECS)}")
    crf = args.crf if args.crf is not None else (30 if args.vcodec == "libsvtav1" else 23)
    if not Path(args.out).exists():
        output_folder(args.out, "--out")  # a file in the way, or a folder that cannot be written, before any work
    s = export_lerobot(
        args.dataset,
        args.out,
        overwrite=args.overwrite,
        fps=args.fps,
        video=VideoOptions(vcodec=args.vcodec, crf=crf),
        flip=args.flip,
        progress=not args.quiet,
    )
    print(
        f"{s.path}: LeRobot dataset (v3.0), {s.episodes} episode{'s' if s.episodes != 1 else ''}, {s.frames} "
        f"frame{'s' if s.frames != 1 else ''}, {len(s.tasks)} task{'s' if len(s.tasks) != 1 else ''}, "
        f"{s.bytes / 2**20:.1f} MiB in {s.seconds:.1f} s"
    )
    return 0


def register(sub) -> None:
    s = sub.add_parser("export", help="write demo files as a LeRobot dataset")
    s.add_argument("dataset", help="a folder of demo files (*.hdf5, one per task) or one demo file")
    s.add_argument(
        "--format", default="lerobot", choices=FORMATS, help="output format: lerobot (v3.0 layout)"
    )
    s.add_argument("--out", required=True, help="the dataset folder to create")
    s.add_argument(
        "--overwrite", action="store_true",
        help="replace --out, a LeRobot dataset, once the new one is complete (an empty folder needs no --overwrite)",
    )
    s.add_argument(
        "--fps", type=at_least(1), default=None, help="frames per second (default: the demos' control rate)"
    )
    s.add_argument("--vcodec", default="libsvtav1", help="video encoder: libsvtav1 (AV1, default) or libx264")
    s.add_argument(
        "--crf", type=at_least(0), default=None,
        help="video quality, lower is better (default 30 AV1, 23 H.264)",
    )
    s.add_argument(
        "--flip",
        metavar="rows|columns|both",
        help="flip the pictures upside down (rows), left to right (columns) or both; for LeRobot's LIBERO "
        "environment: columns (docs/interop.md)",
    )
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_export)
