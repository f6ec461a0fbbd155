"""`libero-ll teleop`: record demos of a task by driving the arm from the keyboard."""

from __future__ import annotations

import argparse
from pathlib import Path

from libero_ll.cli.args import SEED, at_least, fraction, output_file
from libero_ll.envs.env import ROBOT_MESHES
from libero_ll.errors import LiberoError


def cmd_teleop(args) -> int:
    from libero_ll.data.teleop import (
        QUITTED,
        SUCCESS,
        TIMEOUT,
        KeyboardDevice,
        OpenCVViewer,
        demos_to_append,
        keys_help,
        teleop_session,
    )
    from libero_ll.envs.env import EnvConfig, load_task

    if args.demos < 1:
        raise LiberoError(f"--demos must be at least 1, got {args.demos}")
    out = Path(args.out)
    if args.append and args.overwrite:
        raise LiberoError("--append keeps the demos of --out and --overwrite replaces them: give one of them")
    if out.exists() and not (args.overwrite or args.append):
        raise LiberoError(f"{out} exists; choose another --out, pass --append to add demos to it, or --overwrite "
                          "to replace it")
    output_file(out, "--out")  # checked now: the demos are written only when the session ends
    load_task(args.file)  # a bad task file fails before any window opens
    env_config = EnvConfig(image_size=args.image_size, robot_mesh=args.robot_mesh)
    if args.append:
        demos_to_append(out, Path(args.file), env_config)  # a file of another task or size: before any window
    # Fails fast, before the scene is built, when pynput or a display is missing.
    device = KeyboardDevice(pos_scale=args.pos_scale, rot_scale=args.rot_scale)
    viewer = None
    try:
        if not args.no_view:
            viewer = OpenCVViewer(size=args.view_size)
        more = " more" if args.append and out.exists() else ""
        print(f"teleoperating {Path(args.file).stem}: {args.demos}{more} demos wanted, writing {out}")
        print("keys (read from the whole desktop, whichever window is in front):")
        print(keys_help())

        def on_episode(episode: int, outcome: str, steps: int, stats) -> None:
            if outcome == SUCCESS:
                what = f"goal reached in {steps} steps, kept ({stats.kept}/{args.demos})"
            elif outcome == TIMEOUT:
                what = f"no goal after {steps} steps (--max-steps), discarded"
            elif outcome == QUITTED:
                what = stats.ended_by + (f" after {steps} steps, this episode discarded" if steps else "")
            else:
                what = f"reset after {steps} steps, discarded"
            print(f"  episode {episode}: {what}", flush=True)

        stats = teleop_session(
            args.file,
            out,
            device,
            args.demos,
            seed=args.seed,
            env_config=env_config,
            max_steps=args.max_steps,
            viewer=viewer,
            rate_hz=EnvConfig().control_freq,
            on_episode=on_episode,
            append=args.append,
        )
    finally:
        if viewer is not None:
            viewer.close()
        device.close()
    from libero_ll.cli.train import EXIT_INTERRUPTED, EXIT_TERMINATED

    where = f"written to {stats.path}" if stats.path else "nothing written"
    if stats.path and stats.earlier:
        where += f" after its {stats.earlier} earlier demo{'s' if stats.earlier != 1 else ''}"
    print(
        f"{stats.task}: {stats.kept} demos kept, {stats.discarded} reset, {stats.timed_out} timed out "
        f"in {stats.episodes} episodes ({stats.ended_by}); {where}"
    )
    return {"interrupted": EXIT_INTERRUPTED, "terminated": EXIT_TERMINATED}.get(stats.ended_by, 0)


class _HelpWithKeys(argparse.RawDescriptionHelpFormatter):
    """Puts the key map (from libero_ll.data.teleop, imported only when help is shown) in the epilog."""

    def add_text(self, text):
        if text == _EPILOG:
            from libero_ll.data.teleop import keys_help

            text = "keys:\n" + keys_help() + "\n\n" + _EPILOG
        super().add_text(text)


_EPILOG = (
    "An episode starts recording at its first motion or gripper key and ends when the goal holds (kept), "
    "on q (discarded) or at --max-steps (discarded).\nDemos kept so far are saved on Esc, Ctrl-C or a "
    "closed window.\n`libero-ll train` uses the file in place of the expert's demos when it is the task's own "
    "file in data.dir: <data.dir>/<task file's name>.hdf5 (e.g. --out datasets/quickstart/TASK.hdf5)."
)


def register(sub) -> None:
    s = sub.add_parser(
        "teleop",
        help="record demos of a task by driving the arm from the keyboard",
        description=(
            "Drive the arm from the keyboard (robosuite's keyboard device) and record each episode that\n"
            "reaches the goal as a demo, in the same HDF5 layout as `collect`.\n"
            "Needs pynput (pip install 'libero_ll[teleop]') and a display."
        ),
        epilog=_EPILOG,
        formatter_class=_HelpWithKeys,
    )
    s.add_argument("file", help="a .bddl task file")
    s.add_argument("--out", required=True, help="the HDF5 file to write (atomically, when the session ends)")
    s.add_argument("--demos", type=at_least(1), default=10, help="stop after this many kept demos (default 10)")
    s.add_argument(
        "--seed",
        type=SEED,
        default=None,
        help="episode i resets like the expert's demo i (default: random resets; each demo's seed is stored)",
    )
    s.add_argument(
        "--image-size", type=at_least(1), default=128, help="recorded camera images, pixels (default 128)"
    )
    s.add_argument("--robot-mesh", default="visual", choices=ROBOT_MESHES)
    s.add_argument(
        "--max-steps", type=at_least(1), default=3000, help="step cap per episode at 20 Hz (default 3000)"
    )
    s.add_argument(
        "--pos-scale",
        type=fraction,
        default=0.3,
        help="position action per key press, as a fraction of a full action (default 0.3); a full action sets "
        "the controller's goal 5 cm away, and held it moves the hand about 1.2 cm per step",
    )
    s.add_argument(
        "--rot-scale",
        type=fraction,
        default=0.3,
        help="rotation action per key press, as a fraction of a full action (default 0.3); a full action sets "
        "the controller's goal 0.5 rad away, and held it turns the hand about 0.07 to 0.1 rad per step",
    )
    s.add_argument("--no-view", action="store_true", help="no live window (the keyboard still needs one)")
    s.add_argument(
        "--view-size", type=at_least(1), default=320, help="side of each picture in the window (320)"
    )
    s.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    s.add_argument(
        "--append", action="store_true",
        help="add the new demos after those of an existing --out file (same task, image size and robot meshes); "
        "--demos counts the new ones",
    )
    s.set_defaults(func=cmd_teleop)
