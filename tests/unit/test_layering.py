"""The layers of ../DESIGN.md: no Qt below app/ui, so they stay testable without a display."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "PySide2", "qasync", "shiboken6")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", ["inference", "sources", "server", "annotations"])
def test_no_qt_imports_below_the_ui(package: str) -> None:
    offenders = [
        f"{path.relative_to(APP.parent)} imports {name}"
        for path in sorted((APP / package).rglob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[0] in QT_MODULES
    ]
    assert offenders == []


def test_the_layering_check_sees_qt_imports(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("from PySide6.QtCore import QObject\nimport qasync\n")
    assert {"PySide6.QtCore", "qasync"} <= imported_modules(sample)
