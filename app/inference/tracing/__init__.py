"""Request X-ray: one request's whole life on one timeline, from the client's own stages and
Triton's traces (Qt-free). See docs/traces.md."""
