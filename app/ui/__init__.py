"""PySide6 widgets of the viewer (the only package that imports Qt)."""

import os

# superqt reaches Qt through qtpy, which takes the first binding it finds unless told: this one.
os.environ.setdefault("QT_API", "pyside6")
