#!/usr/bin/env python3
"""Manual Slop entry point: ``python sloppy.py [--headless] [--config PATH] ...``.

All the work is in :mod:`manual_slop.cli`; this file only makes ``src/`` importable
when the package has not been installed.
"""

import sys
from pathlib import Path

try:
    from manual_slop.cli import main
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))
    from manual_slop.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
