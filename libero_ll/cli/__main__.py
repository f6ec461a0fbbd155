"""`python -m libero_ll.cli`."""

import sys

from libero_ll.cli import main

sys.exit(main())
