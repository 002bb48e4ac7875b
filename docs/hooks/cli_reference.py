"""The command-line reference, generated from the program's own argparse parsers.

A mkdocs hook (mkdocs.yml `hooks:`): on the page that holds the marker `<!-- cli-reference -->`
(docs/cli.md) the marker is replaced by every command's usage, options, help and examples,
rendered from `app.cli.build_parser`, so the reference can never drift from the code.
`render_reference()` is also what tests/docs/ checks.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- cli-reference -->"
WIDTH = 82  # columns of the usage blocks, as wide as the page's code blocks (argparse reads $COLUMNS)


def _import_cli() -> Any:
    # This checkout's app, not an installed copy of another one (mkdocs runs from its own bin/).
    if str(ROOT) not in sys.path[:1]:
        sys.path.insert(0, str(ROOT))
    import app.cli

    return app.cli


@contextmanager
def _columns(width: int) -> Iterator[None]:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _cell(text: str) -> str:
    """Plain text as one Markdown table cell: one line, no table or emphasis syntax."""
    text = " ".join(text.split())
    for char, escaped in (("\\", "\\\\"), ("|", "\\|"), ("*", "\\*"), ("<", "&lt;"), (">", "&gt;")):
        text = text.replace(char, escaped)
    return text


def _invocation(formatter: argparse.HelpFormatter, action: argparse.Action) -> str:
    # "--url URL", "-h, --help", "NAME"
    return formatter._format_action_invocation(action)


def _default(action: argparse.Action) -> str:
    """The default, when the help does not already say it (a path shown relative to the checkout)."""
    value = action.default
    if value in (None, False, [], "") or value is argparse.SUPPRESS or "default" in (action.help or ""):
        return ""
    if isinstance(value, str | Path) and Path(value).is_absolute():
        try:
            value = Path(value).relative_to(ROOT)
        except ValueError:
            return ""
    return f" Default: `{value}`."


def _usage(parser: argparse.ArgumentParser) -> str:
    """The full usage line, generated from the arguments even where the parser sets a short one."""
    formatter = parser._get_formatter()
    formatter.add_usage(None, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    lines: list[str] = []
    for group in parser._action_groups:
        actions = [
            a
            for a in group._group_actions
            if not isinstance(a, argparse._HelpAction) and a.help is not argparse.SUPPRESS
        ]
        if not actions:
            continue
        lines += ["", f"**{group.title}**", "", "| argument | what it does |", "|---|---|"]
        for action in actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    anchor = _sub_anchor(parser, choice.dest)
                    lines.append(f"| [`{choice.dest}`](#{anchor}) | {_cell(choice.help or '')} |")
                continue
            help_text = formatter._expand_help(action) if action.help else ""
            what, default = _cell(help_text), _default(action)
            if default and what and not what.endswith("."):
                what += "."
            what += default
            lines.append(f"| `{_invocation(formatter, action)}` | {what} |")
    return lines


def _anchor(prog: str) -> str:
    words = prog.split()[1:] or ["viewer"]
    return "-".join(w.strip("-") for w in words)


def _sub_anchor(parser: argparse.ArgumentParser, name: str) -> str:
    return f"{_anchor(parser.prog)}-{name}"


def _section(parser: argparse.ArgumentParser, title: str, level: int, description: str | None) -> list[str]:
    hashes = "#" * level
    lines = [f"{hashes} {title} {{#{_anchor(parser.prog)}}}", ""]
    if description:
        lines += [description.strip(), ""]
    lines += ["```text", _usage(parser), "```"]
    lines += _options_table(parser)
    if parser.epilog:
        lines += ["", "```text", parser.epilog.strip("\n"), "```"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                lines += ["", *_section(sub, f"`{sub.prog}`", level + 1, sub.description)]
    return lines


def parsers() -> list[tuple[str, argparse.ArgumentParser, str | None]]:
    """(title, parser, description) of the viewer, every sub-command and the smoke test."""
    cli = _import_cli()
    out: list[tuple[str, argparse.ArgumentParser, str | None]] = [
        ("The viewer: `triton-viewer`", cli.build_parser(None), None)
    ]
    for name in cli.SUBCOMMANDS:
        parser = cli.build_parser(name)
        out.append((f"`triton-viewer {name}`", parser, parser.description))
    smoke = cli.smoke_test_parser()
    out.append((f"`{smoke.prog}`", smoke, smoke.description))
    return out


def render_reference() -> str:
    with _columns(WIDTH):
        chunks = []
        for title, parser, description in parsers():
            chunks.append("\n".join(_section(parser, title, 2, description)))
        return "\n\n".join(chunks) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render_reference())
