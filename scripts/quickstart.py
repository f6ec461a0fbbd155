"""The quickstart: expert demos for the 3 quickstart tasks, ER + ResNet-T on the `cpu` preset, then FWT/NBT/AUC.

Run with `make demo`; extra key=value overrides are passed on, e.g.
`.venv/bin/python scripts/quickstart.py train.epochs=2`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    from libero_ll.cli import main as cli

    t0 = time.time()
    code = cli(["train", str(REPO / "configs" / "cpu.yaml"), *sys.argv[1:]])
    print(f"quickstart finished in {(time.time() - t0) / 60:.1f} min")
    return code


if __name__ == "__main__":
    sys.exit(main())
