"""`libero-ll render`: write the camera images of a reset task to a PNG (or another picture format)."""

from __future__ import annotations

import argparse
from pathlib import Path

from libero_ll.cli.args import SEED, about, at_least, output_file
from libero_ll.envs.env import ROBOT_MESHES
from libero_ll.errors import LiberoError

# The largest picture side --size takes. Two pictures are drawn side by side in one offscreen buffer, and
# the software renderer (OSMesa) refuses buffers wider than 16384 pixels; beyond a few thousand pixels a
# picture of these scenes shows no more detail, only takes gigabytes.
MAX_SIZE = 4096

# Picture formats by file suffix (Pillow writes each); a name without a suffix gets PNG.
FORMATS = {
    ".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".bmp": "BMP", ".tif": "TIFF", ".tiff": "TIFF",
    ".webp": "WEBP",
}


def cmd_render(args) -> int:
    _size(args)
    if args.gallery and args.file:
        raise LiberoError(f"give a task file or --gallery, not both (got {args.file} and --gallery)")
    if args.gallery or args.file:
        output_file(args.output, "-o")
        image_format(args.output)
    if args.gallery:
        import tempfile

        from PIL import Image

        from libero_ll.envs.gallery import render_gallery

        with tempfile.TemporaryDirectory(prefix="libero_ll_gallery_") as folder:
            sheet = render_gallery(Path(folder) / "gallery.png", tile=args.size if args.size_given else 192,
                                   seed=args.seed, robot_mesh=args.robot_mesh)
            with Image.open(sheet) as picture:
                out = write_image(picture.convert("RGB"), args.output)
        print(f"wrote {out} (every category and scene family)")
        return 0
    if not args.file:
        raise LiberoError("give a task file, or --gallery")
    import numpy as np
    from PIL import Image

    from libero_ll.envs.env import EnvConfig, LiberoEnv

    try:
        env = LiberoEnv(args.file, EnvConfig(image_size=args.size, robot_mesh=args.robot_mesh))
        try:
            obs = env.reset(seed=args.seed)
            img = np.concatenate([obs["agentview_rgb"], obs["eye_in_hand_rgb"]], axis=1)
        finally:
            env.close()
    except LiberoError as e:
        # A scene that cannot be set up (placements in a cycle, a region too small) is said of its file.
        raise LiberoError(about(args.file, e)) from None
    out = write_image(Image.fromarray(img), args.output)
    print(f"wrote {out} (agentview | eye-in-hand, {args.size}x{args.size} each)")
    return 0


def image_format(path) -> str:
    """The Pillow format that `path`'s suffix names (PNG without one); LiberoError for another suffix."""
    suffix = Path(path).suffix.lower()
    if not suffix:
        return "PNG"
    if suffix not in FORMATS:
        raise LiberoError(
            f"-o {path}: cannot write a picture as '{Path(path).suffix}'; name a file ending in "
            + ", ".join(FORMATS)
        )
    return FORMATS[suffix]


def write_image(picture, path) -> Path:
    """Write a PIL image to `path` in the format its suffix names, atomically: a file already there stays
    whole until the new one is complete. An OSError becomes a LiberoError naming `path`, not the temporary.
    """
    out = Path(path)
    fmt = image_format(out)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        picture.save(tmp, format=fmt)
        tmp.replace(out)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)  # a half-written temporary; the file at `path`, if any, is untouched
        except OSError:
            pass
        raise LiberoError(f"-o {out}: cannot write it: {e.strerror or e}") from None
    return out


def _image_size(text: str) -> int:
    """An argparse type: a picture side, 1 to MAX_SIZE pixels."""
    value = at_least(1)(text)
    if value > MAX_SIZE:
        raise argparse.ArgumentTypeError(f"must be {MAX_SIZE} or less (pixels a side), got {value}")
    return value


_image_size.__name__ = f"picture side of 1 to {MAX_SIZE} pixels"


def register(sub) -> None:
    s = sub.add_parser("render", help="write both camera images of a reset to a PNG, or the asset gallery")
    s.add_argument("file", nargs="?", help="a .bddl task file")
    s.add_argument("--gallery", action="store_true", help="one picture of every category and scene family")
    s.add_argument("-o", "--output", required=True,
                   help="the picture to write; its suffix names the format (" + ", ".join(FORMATS) + ")")
    s.add_argument(
        "--size", type=_image_size, default=None,
        help=f"image side, pixels, at most {MAX_SIZE} (128; 192 per gallery tile)",
    )
    s.add_argument("--seed", type=SEED, default=0, help="seed of the reset (default 0)")
    s.add_argument("--robot-mesh", default="visual", choices=ROBOT_MESHES)
    s.set_defaults(func=cmd_render)


def _size(args) -> None:
    args.size_given = args.size is not None
    args.size = 128 if args.size is None else args.size
