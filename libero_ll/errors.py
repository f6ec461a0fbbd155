"""The one base class for errors meant for users; the CLI prints them without a traceback."""


class LiberoError(Exception):
    """An error a user can act on: bad input, a missing file, an unknown name."""
