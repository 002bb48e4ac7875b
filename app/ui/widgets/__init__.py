"""Small widgets shared by several windows: the banner, overlays, sliders, plots, pickers."""
