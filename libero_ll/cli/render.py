"""`libero-ll render`: write the camera images of a reset task to a PNG."""

from __future__ import annotations

from pathlib import Path

from libero_ll.cli.args import SEED, at_least, output_file
from libero_ll.envs.env import ROBOT_MESHES
from libero_ll.errors import LiberoError


def cmd_render(args) -> int:
    _size(args)
    if args.gallery and args.file:
        raise LiberoError(f"give a task file or --gallery, not both (got {args.file} and --gallery)")
    if args.gallery or args.file:
        output_file(args.output, "-o")
    if args.gallery:
        from libero_ll.envs.gallery import render_gallery

        out = render_gallery(args.output, tile=args.size if args.size_given else 192)
        print(f"wrote {out} (every category and scene family)")
        return 0
    if not args.file:
        raise LiberoError("give a task file, or --gallery")
    import numpy as np
    from PIL import Image

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    env = LiberoEnv(args.file, EnvConfig(image_size=args.size, robot_mesh=args.robot_mesh))
    try:
        obs = env.reset(seed=args.seed)
        img = np.concatenate([obs["agentview_rgb"], obs["eye_in_hand_rgb"]], axis=1)
    finally:
        env.close()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp.png")
    Image.fromarray(img).save(tmp)
    tmp.replace(out)
    print(f"wrote {out} (agentview | eye-in-hand, {args.size}x{args.size} each)")
    return 0


def register(sub) -> None:
    s = sub.add_parser("render", help="write both camera images of a reset to a PNG, or the asset gallery")
    s.add_argument("file", nargs="?", help="a .bddl task file")
    s.add_argument("--gallery", action="store_true", help="one picture of every category and scene family")
    s.add_argument("-o", "--output", required=True)
    s.add_argument(
        "--size", type=at_least(1), default=None, help="image side, pixels (128; 192 per gallery tile)"
    )
    s.add_argument("--seed", type=SEED, default=0)
    s.add_argument("--robot-mesh", default="visual", choices=ROBOT_MESHES)
    s.set_defaults(func=cmd_render)


def _size(args) -> None:
    args.size_given = args.size is not None
    args.size = 128 if args.size is None else args.size
