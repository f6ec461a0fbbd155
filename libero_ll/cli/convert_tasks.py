"""`libero-ll convert-tasks`: task files written for LIBERO's models, turned to stand the same way with ours (and
with our models of LIBERO's sizes where ours are much larger)."""

from __future__ import annotations

import sys
from pathlib import Path

from libero_ll.cli.args import about, output_folder
from libero_ll.errors import LiberoError


def _sources(given: list[str], out_dir: Path) -> list[tuple[Path, Path]]:
    """(task file, its path under --out): a file given goes to its name, the .bddl files under a folder given
    to their paths below that folder (LIBERO's bddl_files/ holds a folder per suite), but those in `out_dir`
    (written by an earlier conversion into a folder inside the one given)."""
    out = []
    written = out_dir.resolve()
    for g in given:
        path = Path(g)
        if path.is_dir():
            inside = written != path.resolve()  # --out the folder itself: refused below, file by file
            found = sorted(f for f in path.rglob("*.bddl") if not (inside and written in f.resolve().parents))
            if not found:
                raise LiberoError(f"{path}: a folder with no .bddl task files")
            out += [(f, f.relative_to(path)) for f in found]
        elif path.is_file():
            out.append((path, Path(path.name)))
        else:
            raise LiberoError(f"{path}: no such task file or folder")
    seen: dict[Path, Path] = {}
    for src, rel in out:
        if rel in seen and seen[rel].resolve() != src.resolve():
            raise LiberoError(f"{seen[rel]} and {src} would both be written to {rel} under --out")
        seen[rel] = src
    return out


def _yaws(pairs) -> str:
    return ", ".join(f"{lo:.4g}" if lo == hi else f"{lo:.4g} to {hi:.4g}" for lo, hi in pairs)


def cmd_convert_tasks(args) -> int:
    from libero_ll.bddl.parser import parse_file
    from libero_ll.bddl.writer import write_string
    from libero_ll.paths import atomic_write_bytes
    from libero_ll.tasks.libero_files import convert_spec

    out_dir = output_folder(args.out, "--out")
    sources = _sources(args.files, out_dir)
    for src, rel in sources:
        dest = out_dir / rel
        if dest.resolve() == src.resolve():
            raise LiberoError(f"--out {args.out}: would write {rel} over the file it is converted from; "
                              "give another folder")
        if dest.exists() and not args.overwrite:
            raise LiberoError(f"{dest} exists; pass --overwrite to replace the files in --out")
    failed, turned_files, resized_files = [], 0, 0
    for src, rel in sources:
        dest = out_dir / rel
        try:
            spec, turned, resized = convert_spec(parse_file(src), to_libero=args.to_libero)
            # A file with nothing to change is copied as it is; a changed one is written out whole.
            text = write_string(spec) if turned or resized else src.read_text(encoding="utf-8")
        except LiberoError as e:
            # One file that cannot be read does not stop the others; each is named.
            print(about(src, e), file=sys.stderr)
            failed.append(str(src))
            continue
        atomic_write_bytes(dest, text.encode("utf-8"))
        if not turned and not resized:
            print(f"{dest}: nothing to change, copied")
            continue
        turned_files += bool(turned)
        resized_files += bool(resized)
        said = "; ".join(
            [f"{t.instance} ({t.category}) turned {t.by_degrees:+.0f} degrees, yaw {_yaws(t.before)} -> {_yaws(t.after)}"
             for t in turned]
            + [f"{r.instance} {r.before} -> {r.after}" for r in resized]
        )
        print(f"{dest}: {said}")
    done = len(sources) - len(failed)
    way = "for LIBERO's models" if args.to_libero else "from LIBERO's models to ours"
    sizes = "LIBERO's categories" if args.to_libero else "our models of LIBERO's sizes"
    if done:
        print(f"{done} task file{'s' if done != 1 else ''} written to {out_dir}, {turned_files} with fixtures turned "
              f"{way}, {resized_files} with objects or fixtures given {sizes}")
    if failed:
        named = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
        raise LiberoError(f"{len(failed)} of {len(sources)} task files not converted (above): {named}")
    return 0


def register(sub) -> None:
    s = sub.add_parser(
        "convert-tasks",
        help="turn the fixtures of task files written for LIBERO's models to stand the same way with ours, and give "
        "their plates, bowls, cabinets and microwaves our models of LIBERO's sizes (or back, --to-libero)",
    )
    s.add_argument("files", nargs="+", help=".bddl task files, or folders of them (searched below)")
    s.add_argument("--out", required=True, help="folder for the converted files (a folder given keeps its layout)")
    s.add_argument("--to-libero", action="store_true",
                   help="the other way: our task files turned for LIBERO's models")
    s.add_argument("--overwrite", action="store_true", help="replace files already in --out")
    s.set_defaults(func=cmd_convert_tasks)
