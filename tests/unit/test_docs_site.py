"""The README stays a front page and the docs site stays whole.

`make docs` (which `make test` runs) builds the site with `mkdocs build --strict`, which fails on a
broken link or anchor inside docs/. These checks cover what that build cannot see, in a second:
the README's size and links (it is outside the site), every page in the nav, every path of the
repository the pages name, and the generated command-line reference listing every option.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import markdown
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 250


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)


def nav_pages(nav: object) -> list[str]:
    """Every page file named in mkdocs.yml's nav, however deeply nested."""
    if isinstance(nav, str):
        return [nav] if nav.endswith(".md") else []
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def anchors_of(page: Path) -> set[str]:
    """The heading ids mkdocs gives a page (the same toc and attr_list extensions)."""
    md = markdown.Markdown(extensions=["toc", "attr_list", "tables", "admonition", "pymdownx.superfences"])
    md.convert(page.read_text(encoding="utf-8"))
    ids: set[str] = set()

    def walk(tokens: list[dict]) -> None:
        for token in tokens:
            ids.add(token["id"])
            walk(token["children"])

    walk(md.toc_tokens)
    return ids


def cli_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "hooks" / "cli_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines: its details belong in docs/"
    for command in ("make run", "make test", "make check"):
        assert command in text, f"README.md no longer says `{command}`"
    assert "](docs/images/screenshot.png)" in text, "README.md lost its screenshot"


def test_readme_links_lead_somewhere() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 20, local  # the front page points into the docs
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), f"README.md links to {link}: no such file"
        if anchor:
            assert anchor in anchors_of(target), f"README.md links to {link}: no such anchor in {path}"


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = nav_pages(config["nav"])
    on_disk = [str(p.relative_to(DOCS)) for p in pages()]
    assert sorted(set(on_disk) - set(in_nav)) == [], "pages missing from mkdocs.yml's nav"
    assert sorted(set(in_nav) - set(on_disk)) == [], "nav entries without a page"
    assert len(in_nav) == len(set(in_nav)), "a page is twice in the nav"


PATH = re.compile(r"(?<![\w/.~-])((?:app|tests|packaging|resources|docs)/[\w./-]*)")


@pytest.mark.parametrize("doc", [README, *pages()], ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_the_docs_name_exist(doc: Path) -> None:
    """A module, script or folder named in the docs exists (a renamed one fails here, not a reader)."""
    missing = set()
    for found in PATH.findall(doc.read_text(encoding="utf-8")):
        path = found.rstrip(".")
        if "." not in path and not path.endswith("/") and path.count("/") < 2:
            continue  # words, not a path: "the app/plain ratio"
        if not (ROOT / path).exists():
            missing.add(path)
    assert not missing, f"{doc.name} names paths that do not exist: {sorted(missing)}"


def all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += all_parsers(sub)
    return out


def test_the_cli_reference_lists_every_command_and_option() -> None:
    hook = cli_reference()
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert hook.MARKER in page
    rendered = hook.on_page_markdown(page, None, None, None)
    assert hook.MARKER not in rendered
    from app.cli import SUBCOMMANDS, build_parser, smoke_test_parser

    parsers = [build_parser(None), *(build_parser(name) for name in SUBCOMMANDS), smoke_test_parser()]
    for top in parsers:
        for parser in all_parsers(top):
            assert f"{{#{hook._anchor(parser.prog)}}}" in rendered, parser.prog
            for action in parser._actions:
                for option in action.option_strings:
                    if option not in ("-h", "--help"):
                        assert f"`{option}" in rendered, f"{parser.prog} {option} is not in the reference"
                positional = not action.option_strings and not isinstance(action, argparse._SubParsersAction)
                if positional:
                    assert f"`{action.metavar or action.dest}" in rendered, f"{parser.prog} {action.dest}"
    # The reference is the parsers' own text, not a copy: an option's help appears as written.
    infer_help = next(a.help for a in build_parser("infer")._actions if "--track" in a.option_strings)
    assert infer_help and " ".join(infer_help.split()) in rendered
    # No absolute path of the machine the site was built on.
    assert str(ROOT) not in rendered
