"""Structured log lines of ``pyhpa run``, as controllers write them.

Every record is one line: ``time``, ``level``, ``logger``, ``msg`` and the record's own fields (passed as
``extra=fields(key=value, ...)``), either as logfmt (``--log-format text``, the default)::

    time=2026-11-21T10:00:00.123Z level=info logger=pyhpa.controller.reconciler msg=rescaled autoscaler=default/web target=Deployment/web old=2 new=4 decided_by="Metric/cpu resource utilization (percentage of request)" reason="cpu resource utilization (percentage of request) above target"

or as one JSON object per line (``--log-format json``), the same keys, numbers as numbers. Values with
spaces, quotes or ``=`` are JSON-quoted in logfmt; None is ``-``; a traceback goes into ``exception``
(quoted: the line stays one line).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

LOG_FORMATS = ("text", "json")


def fields(**values: Any) -> dict:
    """``extra=`` of a logging call: the record's structured fields, in this order."""
    return {"fields": values}


def logfmt(values: dict) -> str:
    """``key=value`` pairs; values with spaces, quotes or ``=`` (or empty) JSON-quoted; None as ``-``."""
    out = []
    for k, v in values.items():
        text = "-" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
        if not text or any(c in text for c in ' "=\n\t'):
            text = json.dumps(text)
        out.append(f"{k}={text}")
    return " ".join(out)


def _time(created: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"


def record_fields(record: logging.LogRecord, formatter: logging.Formatter) -> dict:
    """time, level, logger, msg, the record's fields, and ``exception`` when it carries one."""
    out = {"time": _time(record.created), "level": record.levelname.lower(), "logger": record.name,
           "msg": record.getMessage()}
    out.update(getattr(record, "fields", None) or {})
    if record.exc_info:
        out["exception"] = formatter.formatException(record.exc_info)
    return out


class LogfmtFormatter(logging.Formatter):
    """One logfmt line per record (``--log-format text``)."""

    def format(self, record: logging.LogRecord) -> str:
        return logfmt(record_fields(record, self))


class JsonFormatter(logging.Formatter):
    """One JSON object per record (``--log-format json``)."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(record_fields(record, self), default=str, separators=(",", ":"))


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of ``--log-format`` ("text" or "json")."""
    return JsonFormatter() if log_format == "json" else LogfmtFormatter()
