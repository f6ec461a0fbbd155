"""libero_ll: lifelong imitation learning for robot manipulation.

Importing the package has no side effects: no simulator, no GL context, no files.
"""

__version__ = "0.1.0"

# The largest seed anywhere in the package: torch's generator, numpy's and the files that record seeds take
# 64-bit integers, and numpy takes no negative seed.
MAX_SEED = 2**63 - 1
