"""The session core: requests in flight, groups, windows, retries, client batching, statistics."""
