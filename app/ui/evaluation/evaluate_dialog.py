"""Evaluate against labels…: the dataset (a COCO .json, a data.yaml or a folder: chosen, typed
or dropped on the dialog), its format (told from its files, or forced), where its images are
when not beside the labels, a class map, and what to compare (boxes, masks or keypoints)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.evaluation.datasets import FORMATS, DatasetFormat
from app.evaluation.iou_type import IouType
from app.ui.base.window_fit import secondary_window
from app.ui.widgets.path_drop import PathDrop

AUTO = "auto"
DATASET_FILTER = "Datasets (*.json *.yaml *.yml);;All files (*)"
CLASS_MAP_FILTER = "Class maps (*.json *.txt *.csv *.tsv);;All files (*)"
IOU_TEXT = {IouType.BBOX: "boxes (bbox)", IouType.SEGM: "masks (segm)", IouType.KEYPOINTS: "keypoints (OKS)"}


@dataclass(frozen=True)
class EvaluationChoice:
    dataset: str
    fmt: DatasetFormat | None = None  # None: told from the files
    images: str | None = None  # the images' folder when not beside the labels
    class_map: str | None = None
    iou_type: IouType = IouType.BBOX


class EvaluateDialog(QDialog):
    def __init__(self, model: str, start_dir: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Evaluate against labels")
        self.setObjectName("EvaluateDialog")
        self.drop = PathDrop(self)
        self._dir = start_dir
        self.dataset = QLineEdit()
        self.dataset.setPlaceholderText("a COCO .json, a data.yaml, or a dataset folder (or drop it here)")
        self.format = QComboBox()
        self.format.addItems([AUTO, *FORMATS])
        self.format.setToolTip("auto: told from the files (COCO JSON, YOLO, Pascal VOC, labelme)")
        self.images = QLineEdit()
        self.images.setPlaceholderText("beside the labels")
        self.class_map = QLineEdit()
        self.class_map.setPlaceholderText('none (JSON {"dataset name": "model name"} or two columns)')
        self.iou_type = QComboBox()
        for kind in IouType:
            self.iou_type.addItem(IOU_TEXT[kind], kind.value)
        form = QFormLayout(self)
        intro = QLabel(
            f"Every image of the dataset goes to <b>{model}</b>; its detections are compared with the "
            "labels (COCO mAP, per-class precision and recall, a confusion matrix). The images become "
            "the batch: walk through the worst ones."
        )
        intro.setWordWrap(True)
        form.addRow(intro)
        form.addRow(
            "Dataset",
            self._with_buttons(self.dataset, ("Folder…", self._pick_folder), ("File…", self._pick_file)),
        )
        form.addRow("Format", self.format)
        form.addRow("Images folder", self._with_buttons(self.images, ("Folder…", self._pick_images)))
        form.addRow("Class map", self._with_buttons(self.class_map, ("File…", self._pick_class_map)))
        form.addRow("Compare", self.iou_type)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText("Evaluate")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self.dataset.textChanged.connect(lambda text: ok.setEnabled(bool(text.strip())))
        ok.setEnabled(False)
        self.drop.dropped.connect(self.dataset.setText)
        self.resize(620, self.sizeHint().height())
        secondary_window(self)  # fits the screen, frame included; Esc / Ctrl+W close it

    @staticmethod
    def _with_buttons(edit: QLineEdit, *buttons: tuple[str, object]) -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(edit, 1)
        for text, slot in buttons:
            button = QPushButton(text)
            button.clicked.connect(slot)
            layout.addWidget(button)
        return row

    def choice(self) -> EvaluationChoice:
        fmt = self.format.currentText()
        return EvaluationChoice(
            self.dataset.text().strip(),
            None if fmt == AUTO else DatasetFormat(fmt),
            self.images.text().strip() or None,
            self.class_map.text().strip() or None,
            IouType(self.iou_type.currentData()),
        )

    def set_choice(self, choice: EvaluationChoice) -> None:
        self.dataset.setText(choice.dataset)
        self.format.setCurrentText(choice.fmt or AUTO)
        self.images.setText(choice.images or "")
        self.class_map.setText(choice.class_map or "")
        self.iou_type.setCurrentIndex(max(self.iou_type.findData(choice.iou_type.value), 0))

    # -- choosing files ---------------------------------------------------------------------------
    def _start(self, text: str) -> str:
        return str(Path(text).parent) if text else self._dir

    def _pick_folder(self) -> None:
        self._pick(self.dataset, "The dataset's folder", None)

    def _pick_file(self) -> None:
        self._pick(self.dataset, "The dataset's file (COCO .json or data.yaml)", DATASET_FILTER)

    def _pick_images(self) -> None:
        self._pick(self.images, "The images' folder", None)

    def _pick_class_map(self) -> None:
        self._pick(self.class_map, "A class map", CLASS_MAP_FILTER)

    def _pick(self, edit: QLineEdit, title: str, file_filter: str | None) -> None:
        """A folder (no filter) or a file into `edit`; the dialog starts beside the dataset."""
        start = self._start(self.dataset.text())
        options = QFileDialog.Option.DontUseNativeDialog
        if file_filter is None:
            chosen = QFileDialog.getExistingDirectory(self, title, start, options)
        else:
            chosen, _ = QFileDialog.getOpenFileName(self, title, start, file_filter, options=options)
        if chosen:
            edit.setText(chosen)
