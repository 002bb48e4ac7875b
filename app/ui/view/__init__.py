"""The picture and what is drawn on it: the zoomable image view and its graphics items."""
