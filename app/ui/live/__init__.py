"""The live preview: camera, video or stream, its controls and tracking."""
