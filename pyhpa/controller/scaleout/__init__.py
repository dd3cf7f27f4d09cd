"""Scale-out: leader election and shards across replicas, on coordination.k8s.io Leases."""
