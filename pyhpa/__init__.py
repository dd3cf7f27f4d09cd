"""pyhpa: the Kubernetes Horizontal Pod Autoscaler, rebuilt in Python."""

__version__ = "0.1.0"
