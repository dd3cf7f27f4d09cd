"""Registering an aggregated API server with kube-apiserver on this machine: its Service (a loopback cluster IP), an
EndpointSlice for the aggregator's availability check, and its APIServices (``caBundle``: the cluster's CA).

Used for metrics-server and prometheus-adapter (``cluster.py``) and the metrics fixture (``metrics.py``).
"""

from __future__ import annotations


def register_service(plane, namespace: str, name: str, ip: str, port: int,
                     apis: list[tuple[str, str, int]]) -> None:
    """Create (or replace) the Service ``namespace/name`` with cluster IP ``ip`` and ``port``, a ready endpoint
    for the aggregator's availability check, and an APIService per (group, version, versionPriority) of ``apis``
    pointing at it with the cluster CA as ``caBundle``; wait until every one is Available."""
    import base64

    from lightkube import ApiError, codecs
    from lightkube.resources.apiregistration_v1 import APIService

    client = plane.client()
    assert plane.pki is not None
    ca = base64.b64encode(plane.pki.ca_crt.read_bytes()).decode()
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
               {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
                "spec": {"type": "ClusterIP", "clusterIP": ip,
                         "ports": [{"name": "https", "port": port, "targetPort": port}]}},
               # The aggregator's availability check wants a ready endpoint of the Service (the endpointslice
               # controller would write the pod's address); its proxy dials the cluster IP, never this address
               # (192.0.2.0/24 is TEST-NET-1, documentation only: validation refuses loopback endpoints).
               {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": name, "namespace": namespace,
                             "labels": {"kubernetes.io/service-name": name,
                                        "endpointslice.kubernetes.io/managed-by": "controlplane.pyhpa.dev"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["192.0.2.10"], "conditions": {"ready": True}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
    wanted = []
    for group, version, priority in apis:
        wanted.append(f"{version}.{group}")
        objects.append({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                        "metadata": {"name": f"{version}.{group}"},
                        "spec": {"group": group, "version": version, "caBundle": ca,
                                 "service": {"namespace": namespace, "name": name, "port": port},
                                 "groupPriorityMinimum": 100, "versionPriority": priority}})
    for obj in objects:
        resource = codecs.from_dict(obj)
        try:
            client.create(resource)
        except ApiError as e:
            if e.status.code != 409:
                raise
            if obj["kind"] == "Namespace":
                continue
            client.delete(type(resource), obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
            client.create(resource)

    def available() -> bool:
        found = {s.metadata.name: s for s in client.list(APIService) if s.metadata.name in wanted}
        return len(found) == len(wanted) and all(
            any(c.type == "Available" and c.status == "True" for c in (s.status.conditions or []))
            for s in found.values() if s.status)

    plane._wait(available, "kube-apiserver")
