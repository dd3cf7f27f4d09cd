"""Caches and informers: what the controller knows of the cluster (LIST + WATCH), in compact records."""
