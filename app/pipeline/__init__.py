"""The feeding layer under the viewer and the command line: inputs -> requests -> results.

- `batch.BatchJob`: files and folders, one result per input (local failures included)
  through a bounded window; counts; cancel.
- `live.LiveJob` / `live.LiveRun`: a live source, latest frame wins (or frame by frame),
  never blocking the capture thread; stop wakes everything.
- `sweep.Sweep`: the load ramp on the user's images; `tune.Tuner`: the same ramp for each
  server config tried (loaded as an override, the original restored), the Pareto front
  and a recommendation (`tune_settings`, `tune_analysis`, `tune_export`).
Qt-free: ui/ and commands/ are thin adapters over it, so both write the same records.
"""
