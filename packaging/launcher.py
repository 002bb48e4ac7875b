"""The frozen program's entry script: app/__main__.py's main(), which calls
multiprocessing.freeze_support() before anything else."""

import sys

from app.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
