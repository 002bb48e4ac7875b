"""Model profiles: what a model takes and gives, detected or from a file, and its post-processing."""
