"""The one base class for errors meant for users; the CLI prints them without a traceback."""


class LiberoError(Exception):
    """An error a user can act on: bad input, a missing file, an unknown name."""


class SceneError(LiberoError):
    """A task's scene cannot be set up as its file asks (a layout our models cannot take, a goal that holds at the
    start): the task's own fault, not the command's or the machine's, so that a command over many tasks (`collect`
    of a suite) can give that task up and go on with the others."""


def yaml_problem(e: Exception) -> str:
    """What a YAML error (PyYAML's, or OmegaConf's reading of a file) says is wrong, and where: "found duplicate
    key 'every' at line 3, column 3". Other errors: their first line."""
    problem, mark = getattr(e, "problem", None), getattr(e, "problem_mark", None)
    if not problem:
        text = str(e).strip()
        return text.splitlines()[0] if text else type(e).__name__
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(problem)
