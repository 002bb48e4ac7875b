"""Accuracy against labelled data (Qt-free): datasets in the formats the product exports read
back as ground truth, COCO metrics from faster-coco-eval (pycocotools' figures, in C++),
per-class operating points, a confusion matrix, the worst images, the report and its plots.

- `datasets`: COCO JSON, YOLO, Pascal VOC and labelme readers, told apart automatically;
- `run.DatasetRun`: the dataset's images through the normal pipeline (`BatchJob`);
- `evaluate.evaluate_results`: results + dataset -> `Evaluation` (metrics, operating points);
- `operating.OperatingPoints`: P/R/F1 and per-image errors at any score threshold, without
  running the model again (what the viewer's score slider calls);
- `report`, `plots`: the JSON report and its PNGs.
"""
