"""``python -m simulation``: see :mod:`simulation.runner`."""

from __future__ import annotations

import sys

from simulation.runner import main

if __name__ == "__main__":
    sys.exit(main())
