"""The wall of streams: several live sources at once, each in a tile of a grid with its own
model, in-flight window and figures; a double-click focuses one in the single live view."""
