"""The `libero-ll` command: parse arguments and call one function per subcommand.

Each subcommand lives in its own module with a `register(subparsers)` function; the modules stay
thin and call into the library.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from libero_ll.errors import LiberoError
from libero_ll.processes import show_warning

# Modules of the subcommands, in the order of `libero-ll --help`.
SUBCOMMANDS = (
    "list_names", "check", "render", "init_states", "convert_tasks", "generate", "collect", "verify", "export",
    "import_data", "teleop", "train", "sweep", "evaluate", "metrics", "report",
)


def build_parser() -> argparse.ArgumentParser:
    import importlib

    p = argparse.ArgumentParser(prog="libero-ll", description="Lifelong imitation learning for robot manipulation.")
    p.add_argument("--debug", action="store_true", help="show tracebacks (also taken after the subcommand)")
    sub = p.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"libero_ll.cli.{name}").register(sub)
    # `--debug` anywhere on the line: each subcommand takes it too. SUPPRESS leaves the value that
    # `libero-ll --debug CMD` set alone when it is not repeated after the subcommand.
    for subparser in dict.fromkeys(sub.choices.values()):
        subparser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # key=value overrides may also follow options (`sweep FILE -o DIR key=value`), which argparse leaves over.
    if extra and hasattr(args, "overrides") and all("=" in a and not a.startswith("-") for a in extra):
        args.overrides = list(args.overrides or []) + extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    from libero_ll.cli.train import EXIT_TERMINATED, Terminated, sigterm_as_interrupt

    try:
        # SIGTERM (kill, timeout, a batch scheduler) stops any command as Ctrl-C does, with a word.
        with warnings.catch_warnings(), sigterm_as_interrupt():
            warnings.showwarning = show_warning
            return int(args.func(args) or 0)
    except LiberoError as e:
        if args.debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of the output has gone (`libero-ll list policies | head`): stop without a word. Output still
        # buffered would fail again when Python flushes it at exit, so stdout goes nowhere from here.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:
        # A path the system refused (a folder that is not writable, a file where a folder must be, a full
        # disk): say which, without a traceback. Where a command can, it checks its paths before any work.
        if args.debug:
            raise
        print(f"error: {_os_error(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        if isinstance(e, Terminated):
            print("terminated", file=sys.stderr)
            return EXIT_TERMINATED
        print("interrupted", file=sys.stderr)
        return 130


def _os_error(e: OSError) -> str:
    what = e.strerror or str(e)
    if e.filename is None:
        return what
    where = f"{e.filename}" + (f" -> {e.filename2}" if e.filename2 is not None else "")
    return f"{where}: {what}"


if __name__ == "__main__":
    sys.exit(main())
