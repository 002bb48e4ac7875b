"""Analyse > Evaluate against labels…: a thin Qt layer over app.evaluation. The dialog (a dataset
chosen or dropped, its format, images folder and class map), the controller (the dataset's
images through `DatasetRun` as the viewer's batch, the evaluation on the executor, the operating
point, the marks on the picture, the export), the Evaluation panel (metrics, per-class table, PR
curves, the confusion matrix as a heat map) and each compared model's mAP in the A/B window."""
