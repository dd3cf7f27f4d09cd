"""kubedouble: an in-process Kubernetes API server double over real HTTP, for tests.

Test infrastructure only (not part of the pyhpa product). Drive it with lightkube's real clients::

    async with KubeDouble() as kd:
        client = kd.async_client()          # or AsyncClient(KubeConfig.from_server(kd.url))

    kd = KubeDouble.start_in_thread()       # for the sync lightkube.Client
    ...
    kd.stop()
"""

from .errors import KubeError
from .faults import Fault
from .server import KubeDouble

__all__ = ["Fault", "KubeDouble", "KubeError"]
