"""Entry point: `python -m app` and the `triton-viewer` console script."""

from __future__ import annotations

import multiprocessing
import sys


def main() -> int:
    # First, before anything else: a frozen build re-enters here for helper processes.
    multiprocessing.freeze_support()
    from app.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
