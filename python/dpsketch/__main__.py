"""``python -m dpsketch``: the command line (see :mod:`dpsketch.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
