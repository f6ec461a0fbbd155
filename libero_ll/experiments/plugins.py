"""A run's own code: the Python modules a config names under `plugins`, imported before the run is built.

A plugin registers learners (`libero_ll.learners.register_learner`) and policies
(`libero_ll.policies.register_policy`) that `learner.name` and `policy.name` may then name, as the built-in
ones are (docs/extending.md). An entry is either

- a path to a `.py` file (relative to the current folder, as every path of a config is): its folder is put on
  the module path and the file imported under its own name, so that the classes it defines are found again
  by name in the processes a run starts (evaluation workers, the evaluation beside training, a sweep's runs);
- or a module name (`my_lab.learners`), looked up from the current folder, then on the Python path.

Every process that loads a config (`load_config`) or runs one (`run_lifelong`, a sweep's runs) imports its
plugins; a module is imported once per process.
A run records each plugin's file and its SHA-256 in environment.json, and a resume says when a file has
changed since the run started.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import traceback
from pathlib import Path

from libero_ll.errors import LiberoError


def import_plugins(entries, where: str = "plugins", started_in: str | None = None) -> list:
    """Import each of `entries` (file paths or module names; see the module's docstring) and return the
    modules, in order.

    Args:
        entries: the config's `plugins` list (None or empty: nothing).
        where: how an error names the setting (e.g. "configs/mine.yaml: plugins").
        started_in: for a run's own config, the folder the run was started from: a relative file path not
            found from the current folder is looked for there.

    Raises:
        LiberoError: a file or module that is not there, a folder (without `__init__.py`) found for a module
            name, one that fails to import (its error and the line of the plugin's code it came from), or one
            that registers a name already taken.
    """
    modules = []
    for entry in entries or []:
        entry = str(entry).strip()
        if not entry:
            raise LiberoError(f"{where}: an empty entry; name a .py file or a module")
        module = _loaded(entry)
        if module is not None:  # imported by this process already (a resume may have found it where it started)
            modules.append(module)
            continue
        if _is_file(entry):
            modules.append(_import_file(entry, where, started_in))
        else:
            modules.append(_check_has_code(_import_module(entry, where), entry, where))
    return modules


def resolved(entries) -> list[str]:
    """`entries` (already imported) with each file given as the absolute path it was imported from, for a
    process that may start elsewhere (the evaluation beside training)."""
    out = []
    for entry in entries or []:
        entry = str(entry).strip()
        module = _loaded(entry) if _is_file(entry) else None
        out.append(str(Path(module.__file__).resolve()) if module is not None else entry)
    return out


def plugin_files(entries) -> list[dict]:
    """What environment.json records of each imported plugin: the entry as written, the file its code came
    from and that file's SHA-256 (None for a module without a file)."""
    records = []
    for entry in entries or []:
        entry = str(entry).strip()
        module = _loaded(entry)
        file = getattr(module, "__file__", None) if module is not None else None
        records.append({
            "entry": entry,
            "file": str(Path(file).resolve()) if file else None,
            "sha256": _sha256(Path(file)) if file and Path(file).is_file() else None,
        })
    return records


def changed_plugins(before: list[dict] | None, now: list[dict]) -> list[str]:
    """The entries of `now` whose file or content differs from the same entry's in `before` (an earlier
    session's `plugin_files`); a message per entry."""
    earlier = {r.get("entry"): r for r in before or [] if isinstance(r, dict)}
    out = []
    for record in now:
        was = earlier.get(record["entry"])
        if was is None:
            continue
        if was.get("file") != record["file"]:
            out.append(f"plugin {record['entry']}: now {record['file']}, {was.get('file')} when the run started")
        elif was.get("sha256") != record["sha256"]:
            out.append(f"plugin {record['entry']}: {record['file']} has changed since the run started")
    return out


def _is_file(entry: str) -> bool:
    return entry.endswith(".py") or os.sep in entry or bool(os.altsep and os.altsep in entry)


def _loaded(entry: str):
    """The module `entry` was imported as in this process, or None."""
    if _is_file(entry):
        module = sys.modules.get(Path(entry).stem)
        file = getattr(module, "__file__", None)
        if file is None:
            return None
        if Path(entry).expanduser().is_file():
            return module if _same_file(file, Path(entry).expanduser()) else None
        # A relative entry not found from here was found from the folder the run started in (load_config): the
        # module of that name imported from a file of that name is the one.
        return module if Path(file).name == Path(entry).name else None
    return sys.modules.get(entry)


def _import_file(entry: str, where: str, started_in: str | None = None):
    path = Path(entry).expanduser()
    if not path.is_file() and not path.is_absolute() and started_in and (Path(started_in) / path).is_file():
        path = Path(started_in) / path
    if path.suffix != ".py":
        raise LiberoError(f"{where}: {entry}: a plugin file must be a .py file")
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "no such file"
        raise LiberoError(f"{where}: {entry}: {what} (relative paths start from {os.getcwd()})")
    name = path.stem
    if not name.isidentifier():
        raise LiberoError(
            f"{where}: {entry}: {name!r} cannot be a module's name; rename the file with letters, digits and "
            f"underscores only"
        )
    module = sys.modules.get(name)
    if module is not None:
        if _same_file(getattr(module, "__file__", None), path):
            return module
        elsewhere = getattr(module, "__file__", None) or "Python itself"
        raise LiberoError(
            f"{where}: {entry}: a module named {name!r} is already imported from {elsewhere}; rename the file"
        )
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return _run_import(name, entry, where, path)


def _import_module(entry: str, where: str):
    if entry in sys.modules:
        return sys.modules[entry]
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    return _run_import(entry, entry, where, None)


def _check_has_code(module, entry: str, where: str):
    """`module`, unless it is a folder without `__init__.py` (a namespace package): importing one runs no code
    (not even of the .py files in it), so it would register nothing; a LiberoError naming the folder then."""
    folders = [str(f) for f in getattr(module, "__path__", None) or []]
    if getattr(module, "__file__", None) is not None or not folders:
        return module
    sys.modules.pop(entry, None)
    inside = sorted({p.stem for f in folders for p in Path(f).glob("*.py") if p.stem.isidentifier()} - {"__init__"})
    if inside:
        some = ", ".join(f"{entry}.{n}" for n in inside[:3]) + (", ..." if len(inside) > 3 else "")
        what = (f"is a folder without __init__.py: importing it runs none of the code in it, so it registers "
                f"nothing; name the module that registers yours ({some}), or its .py file")
    else:
        what = "is a folder that holds no Python module (no .py file), so it registers nothing; name a .py file, or a module"
    raise LiberoError(f"{where}: {entry}: {folders[0]} {what}")


def _run_import(name: str, entry: str, where: str, path: Path | None):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        sys.modules.pop(name, None)
        if path is None and e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            raise LiberoError(
                f"{where}: no module {entry!r} (looked for from {os.getcwd()} and on the Python path); "
                f"name a .py file, or a module that `python -c 'import {entry}'` finds"
            ) from None
        raise LiberoError(f"{where}: {_describe(e, entry, path)}") from e
    except SyntaxError as e:
        sys.modules.pop(name, None)
        spot = _spot(entry, path, e.filename, e.lineno) + (f":{e.offset}" if e.offset else "")
        raise LiberoError(f"{where}: {spot}: {e.msg}") from e
    except LiberoError as e:  # a registry's: a name already taken
        sys.modules.pop(name, None)
        raise LiberoError(f"{where}: {entry}: {e}") from e
    except Exception as e:  # noqa: BLE001 - a plugin's own error, named with the line it came from
        sys.modules.pop(name, None)
        raise LiberoError(f"{where}: {_describe(e, entry, path)}") from e


def _spot(entry: str, path: Path | None, filename, lineno) -> str:
    """Where in the code of plugin `entry` (imported from file `path`, None for a module) an error is:
    `entry:LINE` when it is in the plugin's file (the path said once, as given where it names that file from
    here), else `entry: FILE:LINE`."""
    if path is not None and _same_file(filename, path):
        shown = entry if _same_file(Path(entry).expanduser(), path) else str(path)
        return f"{shown}:{lineno}"
    return f"{entry}: {filename}:{lineno}"


def _describe(e: Exception, entry: str, path: Path | None) -> str:
    """`e` in one line, after the deepest line of the plugin's own code (or of any code) it passed through."""
    frames = traceback.extract_tb(e.__traceback__)
    own = [f for f in frames if path is not None and _same_file(f.filename, path)]
    mine = [f for f in frames if "importlib" not in f.filename and "<frozen" not in f.filename]
    frame = (own or mine or [None])[-1]
    spot = _spot(entry, path, frame.filename, frame.lineno) if frame is not None else entry
    text = traceback.format_exception_only(type(e), e)[-1].strip()
    return f"{spot}: {text} (--debug shows the traceback)"


def _same_file(a, b) -> bool:
    if not a or not b:
        return False
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
