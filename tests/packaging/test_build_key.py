"""The build cache's key (packaging/build_key.py) changes with anything the package is made of,
and only with that: a clean clone of the same commit reuses the build, an edit builds again."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# By path: the folder's name is also PyPI's `packaging`, which the import system would find.
_spec = importlib.util.spec_from_file_location("build_key", ROOT / "packaging" / "build_key.py")
assert _spec is not None and _spec.loader is not None
build_key_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_key_module)
build_key, source_files = build_key_module.build_key, build_key_module.source_files


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for name in ("app", "packaging"):
        (root / name).mkdir(parents=True)
    (root / "app" / "main.py").write_text("print('hi')\n")
    (root / "packaging" / "triton-viewer.spec").write_text("# spec\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return root


def test_the_same_sources_give_the_same_key_and_any_edit_a_new_one(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    key = build_key(root)
    copy = tmp_path / "clone"
    shutil.copytree(root, copy)
    assert build_key(copy) == key, "a clean clone of the same tree reuses the build"
    (copy / "app" / "__pycache__").mkdir()
    (copy / "app" / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0")
    assert build_key(copy) == key, "bytecode is not a source"
    (copy / "app" / "main.py").write_text("print('hello')\n")
    assert build_key(copy) != key, "an edit builds again"
    (copy / "app" / "main.py").write_text("print('hi')\n")
    (copy / "app" / "main.py").rename(copy / "app" / "other.py")
    assert build_key(copy) != key, "a renamed file builds again"


def test_the_build_options_are_part_of_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    key = build_key(root)
    monkeypatch.setenv("GLIBC_FLOOR", "2.31")
    assert build_key(root) != key


def test_the_projects_own_sources_are_all_covered() -> None:
    files = {f.relative_to(ROOT).as_posix() for f in source_files(ROOT)}
    assert {
        "pyproject.toml",
        "packaging/build.sh",
        "packaging/triton-viewer.spec",
        "app/__main__.py",
    } <= files
    assert not any("__pycache__" in f for f in files)
