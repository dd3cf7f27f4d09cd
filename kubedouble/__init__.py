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

__all__ = ["Fault", "KubeDouble", "KubeError"]


def __getattr__(name: str):
    """``KubeDouble`` is imported on first use: it needs the ``kubedouble`` extra (jsonschema, ...), and
    ``python -m kubedouble`` says so in one line instead of a traceback when it is missing."""
    if name == "KubeDouble":
        from .server import KubeDouble

        return KubeDouble
    raise AttributeError(f"module 'kubedouble' has no attribute {name!r}")
