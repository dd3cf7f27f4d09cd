"""Ports on this machine, for the control plane's servers and fixtures (one home: ``cluster`` and ``metrics`` both
take a port here, where ``metrics`` importing ``cluster`` for it made a circle)."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the OS's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
