"""The Kubernetes API: the Cluster and MetricsClient ports, their lightkube implementation, the transport, and in-memory stubs."""
