"""``python -m manual_slop`` — same as ``python sloppy.py``."""

from manual_slop.cli import main

raise SystemExit(main())
