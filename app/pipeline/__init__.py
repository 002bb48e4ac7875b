"""The feeding layer under the viewer and the command line: inputs -> requests -> results.

- `batch.BatchJob`: files and folders, one result per input (local failures included)
  through a bounded window; counts; cancel.
- `live.LiveJob` / `live.LiveRun`: a live source, latest frame wins (or frame by frame),
  never blocking the capture thread; stop wakes everything.
Qt-free: ui/ and commands/ are thin adapters over it, so both write the same records.
"""
