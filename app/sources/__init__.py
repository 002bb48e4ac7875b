"""Where frames come from: image files, folders, video files, cameras, streams (no Qt here)."""
