"""A folder dialog that also takes a folder that does not exist yet (it is created), for
exports that write many files: "labels/" typed in the name field is a new folder, not an
error ("Directory not found")."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget


class NewFolderDialog(QFileDialog):
    """Qt's own (non-native) folder dialog; on accept a typed folder that is missing is
    created first (a failure is said, and the dialog stays open)."""

    def __init__(self, parent: QWidget | None, title: str, start: str) -> None:
        super().__init__(parent, title, start)
        self.setOption(QFileDialog.Option.DontUseNativeDialog)
        self.setFileMode(QFileDialog.FileMode.Directory)
        self.setOption(QFileDialog.Option.ShowDirsOnly)
        self.setLabelText(QFileDialog.DialogLabel.FileName, "Folder (new or existing)")

    def accept(self) -> None:
        chosen = self.selectedFiles()
        if chosen and not Path(chosen[0]).exists():
            try:
                Path(chosen[0]).mkdir(parents=True)
            except OSError as e:
                QMessageBox.warning(self, "Cannot create the folder", f"{chosen[0]}: {e.strerror or e}")
                return
        super().accept()


def ask_folder(parent: QWidget | None, title: str, start: str) -> str | None:
    """A folder, existing or created for the purpose; None when cancelled (modal)."""
    dialog = NewFolderDialog(parent, title, start)
    try:
        if dialog.exec() != QFileDialog.DialogCode.Accepted or not dialog.selectedFiles():
            return None
        return dialog.selectedFiles()[0]
    finally:
        dialog.deleteLater()
