"""Controller settings: the ``pyhpa run`` flags, and the per-object settings of a HorizontalAutoscaler.

Upstream has these only as kube-controller-manager flags for the whole cluster
(``--horizontal-pod-autoscaler-sync-period``, ``-tolerance``, ``-cpu-initialization-period``,
``-initial-readiness-delay``); here the flags are defaults and each HorizontalAutoscaler may override
them in its spec (``syncPeriodSeconds``, ``tolerance``, ``cpuInitializationPeriodSeconds``,
``initialReadinessDelaySeconds``).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from ..adapters.autoscaler import SETTING_FIELDS, ObjectSettings, effective_config, object_settings
from ..adapters.errors import InputError
from ..adapters.parse import object_name, server_url
from ..core import ControllerConfig

# the per-object settings are read with the rest of the object (pyhpa.adapters.autoscaler)
__all__ = ["SETTING_FIELDS", "ObjectSettings", "Settings", "effective_config", "object_settings"]


_UPSTREAM = ControllerConfig()
#: the most concurrent syncs (``--workers``; upstream's --concurrent-horizontal-pod-autoscaler-syncs defaults to 5)
#: Seconds the workers wait at start for the Scale cache's first list (after that, live GETs until it has).
SCALE_CACHE_WAIT_SECONDS = 30.0
MAX_WORKERS = 1000
#: the most namespaces ``--namespace`` may name (each costs a list and a watch per resource type)
MAX_NAMESPACES = 100

@dataclass(frozen=True, slots=True)
class Settings:
    """Flags of ``pyhpa run``. Durations are seconds, ``tolerance`` and ``jitter`` fractions.

    ``namespaces``: the namespaces served (none: every namespace), each listed and watched on its own;
    ``workers``: concurrent syncs (upstream: ``--concurrent-horizontal-pod-autoscaler-syncs``, default 5);
    ``sync_period_seconds``: default period of each autoscaler; ``jitter``: each requeue lands within
    ``period * (1 +- jitter)``, at its namespace's phase of the period when it can
    (``pyhpa.controller.sync.nsmetrics.resync_delay``), so autoscalers do not sync in bursts; ``metrics_timeout_seconds``
    bounds every metrics API call, ``api_timeout_seconds`` every other API call; retries of failed syncs
    back off from ``retry_base_seconds`` doubling up to ``retry_max_seconds``, at most ``retry_qps`` per
    second overall (burst ``retry_burst``, upstream's default controller rate limiter).
    """

    namespaces: tuple[str, ...] = ()
    workers: int = 5
    sync_period_seconds: float = 15.0
    jitter: float = 0.1
    metrics_timeout_seconds: float = 10.0
    api_timeout_seconds: float = 10.0
    health_host: str = "0.0.0.0"
    health_port: int | None = 8080
    # the controller-manager flags: upstream's defaults, as the decision core's ControllerConfig has them
    tolerance: float = _UPSTREAM.tolerance
    cpu_initialization_period_seconds: float = _UPSTREAM.cpu_initialization_period_seconds
    initial_readiness_delay_seconds: float = _UPSTREAM.initial_readiness_delay_seconds
    downscale_stabilization_window_seconds: float = _UPSTREAM.downscale_stabilization_window_seconds
    scale_to_zero: bool = _UPSTREAM.scale_to_zero
    retry_base_seconds: float = 1.0
    retry_max_seconds: float = 300.0
    retry_qps: float = 10.0
    retry_burst: int = 100
    list_chunk_size: int = 500
    watch_timeout_seconds: int = 300
    event_series_window_seconds: float = 1800.0
    shutdown_grace_seconds: float = 10.0
    reporting_controller: str = "pyhpa.dev/controller"
    reporting_instance: str = ""
    field_manager: str = "pyhpa-controller"
    prometheus_url: str | None = None  # --prometheus-url: default server of Prometheus metrics
    preview: bool = False  # --preview: native HPAs, read-only, report what pyhpa would decide
    # --leader-elect*: leader election on a coordination.k8s.io/v1 Lease (pyhpa.controller.scaleout.leadership)
    leader_elect: bool = False
    leader_elect_lease_duration_seconds: float = 15.0
    leader_elect_renew_deadline_seconds: float = 10.0
    leader_elect_retry_period_seconds: float = 2.0
    leader_elect_namespace: str = "pyhpa-system"
    leader_elect_name: str = "pyhpa-controller"
    leader_elect_identity: str = ""  # default: <hostname>_<random>
    memory_store: str = "status"  # --memory-store: status (persisted in status.pyhpa) or process (upstream's)
    # --shards: "1" (one replica syncs everything; with --leader-elect, one leader) or "auto" (each replica holds a
    # Lease of its own in the group --leader-elect-resource-name; autoscalers split by consistent hashing)
    shards: str = "1"

    def __post_init__(self) -> None:
        checks = (
            (self.workers >= 1, "--workers", "must be at least 1"),
            (self.workers <= MAX_WORKERS, "--workers",
             f"must be at most {MAX_WORKERS:,} (concurrent syncs beyond that only queue on the API server), "
             f"got {self.workers:,}"),
            (self.sync_period_seconds > 0, "--sync-period", "must be greater than 0 seconds"),
            (0 <= self.jitter < 1, "--jitter", "must be at least 0 and less than 1"),
            (self.metrics_timeout_seconds > 0, "--metrics-timeout", "must be greater than 0 seconds"),
            (self.api_timeout_seconds > 0, "--api-timeout", "must be greater than 0 seconds"),
            (self.tolerance >= 0, "--tolerance", "must not be negative"),
            (self.cpu_initialization_period_seconds >= 0, "--cpu-initialization-period", "must not be negative"),
            (self.initial_readiness_delay_seconds >= 0, "--initial-readiness-delay", "must not be negative"),
            (self.health_port is None or 0 <= self.health_port <= 65535, "--health-port", "must be 0..65535"),
            (self.leader_elect_retry_period_seconds > 0, "--leader-elect-retry-period", "must be greater than 0 seconds"),
            (self.leader_elect_renew_deadline_seconds > self.leader_elect_retry_period_seconds,
             "--leader-elect-renew-deadline", "must be greater than --leader-elect-retry-period"),
            (self.leader_elect_lease_duration_seconds > self.leader_elect_renew_deadline_seconds,
             "--leader-elect-lease-duration", "must be greater than --leader-elect-renew-deadline"),
            (bool(self.leader_elect_namespace), "--leader-elect-resource-namespace", "must not be empty"),
            (bool(self.leader_elect_name), "--leader-elect-resource-name", "must not be empty"),
            (self.memory_store in ("status", "process"), "--memory-store", "must be status or process"),
            (self.shards in ("1", "auto"), "--shards", f"must be 1 or auto, got {self.shards!r}"),
            (not (self.shards == "auto" and self.leader_elect), "--shards",
             "auto gives every replica a Lease of its own: do not combine it with --leader-elect"),
            (not (self.shards == "auto" and self.preview), "--shards", "auto does not apply to --preview (it writes nothing)"),
        )
        for ok, flag, problem in checks:
            if not ok:
                raise InputError(problem, field=flag)
        if len(self.namespaces) > MAX_NAMESPACES:
            raise InputError(f"at most {MAX_NAMESPACES} namespaces (each is a list and a watch of its own per "
                             f"resource), got {len(self.namespaces)}; serve every namespace instead", field="--namespace")
        for namespace in self.namespaces:
            object_name(namespace, "--namespace", label=True)
        if len(set(self.namespaces)) != len(self.namespaces):
            raise InputError("a namespace is given twice", field="--namespace")
        object_name(self.leader_elect_namespace, "--leader-elect-resource-namespace", label=True)
        object_name(self.leader_elect_name, "--leader-elect-resource-name")
        if self.prometheus_url is not None:
            server_url(self.prometheus_url, "--prometheus-url")

    @property
    def instance(self) -> str:
        """``reportingInstance`` of events: the given one, else ``<controller>-<hostname>``."""
        return self.reporting_instance or f"{self.reporting_controller}-{socket.gethostname()}"

    def base_config(self) -> ControllerConfig:
        """The decision core's config from the flags (before per-object overrides)."""
        return ControllerConfig(
            tolerance=self.tolerance,
            cpu_initialization_period_seconds=self.cpu_initialization_period_seconds,
            initial_readiness_delay_seconds=self.initial_readiness_delay_seconds,
            downscale_stabilization_window_seconds=self.downscale_stabilization_window_seconds,
            scale_to_zero=self.scale_to_zero,
        )
