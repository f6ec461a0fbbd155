"""libero_ll: lifelong imitation learning for robot manipulation.

Importing the package has no side effects: no simulator, no GL context, no files.
"""

__version__ = "0.1.0"
