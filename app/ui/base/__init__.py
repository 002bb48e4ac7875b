"""Qt plumbing the whole viewer shares: the worker-to-GUI bridge, tasks, settings, images, colours."""
