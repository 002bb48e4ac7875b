"""Argument types shared by every command (and the viewer's file arguments), kept free of heavy
imports: the command line parses before any command module is loaded."""

from __future__ import annotations

import argparse


def path_argument(text: str) -> str:
    """A file or folder argument, refused when empty or blank (exit 2, naming the option): an
    unset shell variable (`infer "$DIR"`) would otherwise mean the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"an empty path ({text!r}): name a file or folder (an unset shell variable?)"
        )
    return text
