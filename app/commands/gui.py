"""The viewer (default command). Placeholder until the window exists: serves and says so."""

from __future__ import annotations

import argparse

from app.commands import serve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    serve.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return serve.run(args)
