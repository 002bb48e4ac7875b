"""PySide6 widgets of the viewer (the only package that imports Qt)."""
