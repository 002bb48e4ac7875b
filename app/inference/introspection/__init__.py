"""What a server says about itself: its models, health, version and statistics; its model
repository (load, unload, config text) and its Prometheus metrics."""
