"""Kubernetes ``Status`` error objects and the exception that carries them."""

from __future__ import annotations

from typing import Any, Optional

import msgspec
from aiohttp import web

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_body(code: int, message: str, reason: Optional[str] = None, details: Optional[dict] = None) -> dict:
    """Build a ``meta/v1 Status`` failure object for ``code``."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or REASONS.get(code, "Unknown"),
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def success_body(details: Optional[dict] = None) -> dict:
    """Build a ``meta/v1 Status`` success object (returned by DELETE)."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    return body


def json_response(body: Any, status: int = 200) -> web.Response:
    """Serialise ``body`` as an ``application/json`` response (msgspec: a LIST page of 500 pods is serialised
    several times faster than by ``json.dumps``; the same JSON values)."""
    return web.Response(status=status, body=msgspec.json.encode(body), content_type="application/json")


class KubeError(Exception):
    """An API failure; ``record`` marks errors caused by an invalid request body."""

    def __init__(self, code: int, message: str, reason: Optional[str] = None,
                 details: Optional[dict] = None, record: bool = False):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details
        self.record = record

    def body(self) -> dict:
        """The ``Status`` object for this error."""
        return status_body(self.code, self.message, self.reason, self.details)

    def response(self) -> web.Response:
        """The HTTP response carrying the ``Status`` object."""
        return json_response(self.body(), self.code)


def qualified(plural: str, group: str) -> str:
    """``deployments.apps`` style resource name (core resources have no suffix)."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> KubeError:
    """404 for a missing object."""
    return KubeError(404, f'{qualified(plural, group)} "{name}" not found',
                     details={"name": name, "group": group, "kind": plural})


def path_not_found() -> KubeError:
    """404 for an unknown URL."""
    return KubeError(404, "the server could not find the requested resource",
                     details={"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]})


def already_exists(plural: str, group: str, name: str) -> KubeError:
    """409 AlreadyExists on create."""
    return KubeError(409, f'{qualified(plural, group)} "{name}" already exists', "AlreadyExists",
                     details={"name": name, "group": group, "kind": plural})


def conflict(plural: str, group: str, name: str) -> KubeError:
    """409 Conflict for a stale ``metadata.resourceVersion``."""
    msg = (f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": the object has been '
           "modified; please apply your changes to the latest version and try again")
    return KubeError(409, msg, "Conflict", details={"name": name, "group": group, "kind": plural})


def invalid(kind: str, group: str, name: str, field: str, message: str) -> KubeError:
    """422 Invalid for a body that fails validation (recorded in ``invalid_requests``)."""
    what = f"{kind}.{group}" if group else kind
    full = f'{what} "{name}" is invalid: {field}: {message}' if field else f'{what} "{name}" is invalid: {message}'
    cause = {"reason": "FieldValueInvalid", "message": message, "field": field}
    return KubeError(422, full, "Invalid", details={"name": name, "group": group, "kind": kind, "causes": [cause]},
                     record=True)


def invalid_causes(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> KubeError:
    """422 Invalid with one cause per ``(field, reason, message)``, worded as the API server words several field
    errors: ``Kind.group "name" is invalid: [field: message, field: message]`` (one error: no brackets)."""
    what = f"{kind}.{group}" if group else kind
    parts = [f"{field}: {message}" if field else message for field, _, message in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = {"name": name, "group": group, "kind": kind,
               "causes": [{"reason": reason, "message": message, "field": field} for field, reason, message in causes]}
    return KubeError(422, f'{what} "{name}" is invalid: {joined}', "Invalid", details=details, record=True)


def bad_request(message: str, record: bool = True) -> KubeError:
    """400 BadRequest (recorded in ``invalid_requests`` unless ``record`` is false)."""
    return KubeError(400, message, "BadRequest", record=record)


def expired(message: str) -> KubeError:
    """410 Expired: the requested resourceVersion is older than the retained history."""
    return KubeError(410, message, "Expired")
