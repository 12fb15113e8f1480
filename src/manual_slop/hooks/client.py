"""The Hook API client, and its command line: ``python -m manual_slop.hooks.client``.

:class:`ApiHookClient` is written in :mod:`.api_client` and the commands in :mod:`.cli`;
this module is where callers import the client from and what ``-m`` runs. The command line
imports the client from :mod:`.api_client`, never from here, so the two do not import
each other.
"""

from __future__ import annotations

import sys

from manual_slop.hooks.api_client import DEFAULT_URL, ApiHookClient
from manual_slop.hooks.cli import main

__all__ = ["DEFAULT_URL", "ApiHookClient", "main"]

if __name__ == "__main__":
    sys.exit(main())
