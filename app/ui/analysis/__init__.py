"""Statistics, the request log, where the time goes and the load test."""
