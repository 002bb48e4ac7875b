"""Video analytics, Qt-free: counting lines and zones over tracked detections, heat maps of
where objects were, and the DeepStream nvdsanalytics export of a source's lines and zones.

- `zones_file`: the zones file (lines and zones in source pixels), checked with messages
  naming the file and the field.
- `stream.StreamAnalytics`: one stream's lines and zones, fed frame by frame: events
  (`events.AnalyticsEvent`), counts now (`snapshot()`) and the run's summary.
- `heatmap.HeatMap`: anchor density over a window of time, drawn over a frame, saved as PNG.
- `deepstream`: a zones file as an nvdsanalytics configuration.
The command line (`infer --track --zones`, `zones export`) and the viewer use these.
"""
