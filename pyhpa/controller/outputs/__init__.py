"""Outputs: the status, events, the write gate, Prometheus metrics, logs and the health server."""
