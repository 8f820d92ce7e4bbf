"""``python -m ribsax``: the ``ribsax`` command (see :mod:`ribsax.experiments.cli`)."""

import sys

from ribsax.experiments.cli import main

if __name__ == "__main__":
    sys.exit(main())
