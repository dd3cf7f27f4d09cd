"""Handing an autoscaler over between upstream's HPA controller and pyhpa's, with no moment in which neither
holds it (``pyhpa adopt``, ``pyhpa release``; the objects are built by ``pyhpa.adapters.adoption``).

``adopt`` (HPA -> HorizontalAutoscaler):

1. create the HorizontalAutoscaler with the HPA's spec, paused (``pyhpa.dev/paused``: pyhpa syncs it, records
   its stabilization memory and writes its status, but leaves the replicas to the HPA);
2. wait until pyhpa has synced it (``status.observedGeneration`` is its generation): pyhpa is running and
   watches the namespace; carry the HPA's ``lastScaleTime`` into its status (``carried_status``: merged into the
   status pyhpa wrote, which keeps it from then on);
3. delete the HPA (upstream's controller stops touching the target);
4. lift the pause: an annotation change makes pyhpa sync at once; wait until it has (``status.pause`` gone).

``release`` (HorizontalAutoscaler -> HPA) the other way: pause the HorizontalAutoscaler, create the HPA (the
fields autoscaling/v2 has; the others are named, ``released_hpa``), wait until upstream's controller has synced
it (its ``status.observedGeneration``, HPAGeneration, beta and on in v1.37; ``conditions`` on a server without
it), then delete the HorizontalAutoscaler.

Each step that fails stops the hand-over where it is (``HandOverError``: what failed and the state it left);
nothing is deleted before the other controller holds the target, and running the command again continues from
the state left (a HorizontalAutoscaler marked ``pyhpa.dev/adopted-from`` the HPA's uid is this hand-over's).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Awaitable, Callable

from ..adapters.adoption import (
    ADOPTED_FROM,
    HANDOVER_PAUSE,
    RELEASED_TO,
    adopted_autoscaler,
    carried_status,
    released_hpa,
)
from ..adapters.autoscaler import read_autoscaler
from ..adapters.errors import InputError
from ..api.v1alpha1 import GROUP, PLURAL, VERSION
from ..core.model import PAUSED_ANNOTATION
from .kube.api import ApiFailure, RawApi

__all__ = ["HandOver", "HandOverError", "Outcome", "adopt", "release"]

MERGE_PATCH = "application/merge-patch+json"
#: seconds between two reads while waiting for a controller
POLL_SECONDS = 0.25


class Outcome(StrEnum):
    """What ``adopt`` or ``release`` did to one autoscaler."""

    ADOPTED = "adopted"
    ALREADY_ADOPTED = "already adopted"
    RELEASED = "released"
    ALREADY_RELEASED = "already released"


class HandOverError(Exception):
    """A step of the hand-over of ``key`` failed; the message says which, why, and the state it left."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclass(frozen=True, slots=True, kw_only=True)
class HandOver:
    """One autoscaler handed over: ``key`` (namespace/name), ``outcome``, the replicas the new owner reported
    (``currentReplicas`` of its status; None before it wrote one) and ``dropped``: the fields the release could not
    carry (``pyhpa.adapters.adoption.released_hpa``)."""

    key: str
    outcome: Outcome
    replicas: int | None = None
    dropped: tuple[str, ...] = ()


def hpa_path(namespace: str, name: str = "") -> str:
    """The autoscaling/v2 HPA (``name`` ""): the namespace's collection; namespace "": every namespace's)."""
    base = f"/apis/autoscaling/v2/namespaces/{namespace}" if namespace else "/apis/autoscaling/v2"
    return f"{base}/horizontalpodautoscalers" + (f"/{name}" if name else "")


def autoscaler_path(namespace: str, name: str = "") -> str:
    """The HorizontalAutoscaler (``name`` "": the namespace's collection; namespace "": every namespace's)."""
    base = f"/apis/{GROUP}/{VERSION}" + (f"/namespaces/{namespace}" if namespace else "")
    return f"{base}/{PLURAL}" + (f"/{name}" if name else "")


async def _get(api: RawApi, path: str) -> dict | None:
    try:
        return await api.get_json(path)
    except ApiFailure as err:
        if err.code == 404:
            return None
        raise


def _annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _synced(obj: dict | None, by_conditions: bool) -> bool:
    """Whether the controller of ``obj`` has synced its current spec: ``status.observedGeneration`` is its
    generation (pyhpa always writes it; upstream with HPAGeneration), or with ``by_conditions``, where the server does
    not write it, its status has conditions (``release`` writes none into the HPA it makes)."""
    if obj is None:
        return False
    status = obj.get("status") or {}
    if status.get("observedGeneration") is not None:
        return status["observedGeneration"] == (obj.get("metadata") or {}).get("generation")
    return by_conditions and bool(status.get("conditions"))


async def _wait(check: Callable[[], Awaitable[Any]], timeout: float, clock: Callable[[], float]) -> Any:
    """``check()`` until it gives something truthy (returned), or None after ``timeout`` seconds; an API server
    that fails a read meanwhile (a timeout, a 5xx) is asked again at the next poll."""
    deadline = clock() + timeout
    while True:
        try:
            value = await check()
        except ApiFailure:
            value = None
        if value:
            return value
        if clock() >= deadline:
            return None
        await asyncio.sleep(POLL_SECONDS)


def _replicas(obj: dict | None) -> int | None:
    return ((obj or {}).get("status") or {}).get("currentReplicas")


async def adopt(api: RawApi, namespace: str, name: str, timeout: float,
                clock: Callable[[], float] = time.monotonic) -> HandOver:
    """Hand the HPA ``namespace/name`` over to pyhpa (the steps in the module's doc), waiting up to ``timeout``
    seconds for pyhpa at each of its two syncs. Raises HandOverError (what failed, the state left)."""
    key = f"{namespace}/{name}"
    hpa = await _call(key, "read the HPA", "nothing changed", _get(api, hpa_path(namespace, name)))
    ours = await _call(key, "read the HorizontalAutoscaler", "nothing changed",
                       _get(api, autoscaler_path(namespace, name)))
    if hpa is None:
        if ours is None:
            raise HandOverError(key, "no HorizontalPodAutoscaler (autoscaling/v2) of that name: nothing to adopt")
        if ADOPTED_FROM not in _annotations(ours):
            return HandOver(key=key, outcome=Outcome.ALREADY_ADOPTED, replicas=_replicas(ours))
        return await _lift_pause(api, key, namespace, name, ours, timeout, clock)  # the HPA went in an earlier run
    uid = (hpa.get("metadata") or {}).get("uid", "")
    left_both = ("left: the HorizontalAutoscaler paused (pyhpa.dev/paused) beside the HPA, which still scales the "
                 "target; run the command again, or delete the HorizontalAutoscaler")
    if ours is None:
        manifest = adopted_autoscaler(hpa)
        try:
            read_autoscaler(manifest)
        except InputError as err:
            raise HandOverError(key, f"pyhpa cannot read this HPA ({err.field}: {err.message}): nothing "
                                     "changed") from None
        await _call(key, "create the HorizontalAutoscaler", "nothing changed",
                    api.send_json("POST", autoscaler_path(namespace), manifest))
    elif _annotations(ours).get(ADOPTED_FROM) != uid:
        raise HandOverError(key, "a HorizontalAutoscaler of that name exists already and was not made from this HPA "
                                 "by pyhpa adopt: nothing changed (delete or rename one of them)")
    synced = await _wait(lambda: _synced_or_none(api, autoscaler_path(namespace, name)), timeout, clock)
    if synced is None:
        raise HandOverError(key, f"pyhpa has not synced the HorizontalAutoscaler within {timeout:g} s (is pyhpa run "
                                 f"running and watching namespace {namespace}?); {left_both}")
    await _carry(api, key, autoscaler_path(namespace, name), carried_status(hpa), left_both, timeout, clock)
    await _call(key, "delete the HPA", left_both, api.send_json(
        "DELETE", hpa_path(namespace, name), {"apiVersion": "v1", "kind": "DeleteOptions",
                                              "preconditions": {"uid": uid}}))
    return await _lift_pause(api, key, namespace, name, synced, timeout, clock)


async def _synced_or_none(api: RawApi, path: str, by_conditions: bool = False) -> dict | None:
    obj = await _get(api, path)
    return obj if _synced(obj, by_conditions) else None


async def _lift_pause(api: RawApi, key: str, namespace: str, name: str, ours: dict, timeout: float,
                      clock: Callable[[], float]) -> HandOver:
    """The last step of ``adopt``: the HPA is gone; remove the hand-over's annotations (its pause) and wait for
    pyhpa's sync without it."""
    annotations = _annotations(ours)
    patch: dict = {ADOPTED_FROM: None}
    if HANDOVER_PAUSE in annotations:
        patch.update({HANDOVER_PAUSE: None, PAUSED_ANNOTATION: None})
    await _call(key, "lift the pause", "left: the HPA deleted and the HorizontalAutoscaler paused (holding the "
                "replicas); remove its annotations pyhpa.dev/paused, pyhpa.dev/handover-paused and "
                "pyhpa.dev/adopted-from, or run the command again", api.send_json(
                    "PATCH", autoscaler_path(namespace, name), {"metadata": {"annotations": patch}}, MERGE_PATCH))
    path = autoscaler_path(namespace, name)

    async def resumed() -> dict | None:
        obj = await _get(api, path)
        return obj if obj is not None and "pause" not in (obj.get("status") or {}) else None

    done = await _wait(resumed, timeout, clock) if HANDOVER_PAUSE in annotations else ours
    if done is None:
        raise HandOverError(key, f"the pause is lifted but pyhpa has not synced the HorizontalAutoscaler since, within "
                                 f"{timeout:g} s: left: the HPA deleted, the HorizontalAutoscaler not paused (pyhpa "
                                 "scales it when it syncs)")
    return HandOver(key=key, outcome=Outcome.ADOPTED, replicas=_replicas(done))


async def release(api: RawApi, namespace: str, name: str, timeout: float,
                  clock: Callable[[], float] = time.monotonic) -> HandOver:
    """Hand the HorizontalAutoscaler ``namespace/name`` back to upstream's HPA controller (the steps in the
    module's doc), waiting up to ``timeout`` seconds for its sync. Raises HandOverError (what failed, the state
    left)."""
    key = f"{namespace}/{name}"
    ours = await _call(key, "read the HorizontalAutoscaler", "nothing changed",
                       _get(api, autoscaler_path(namespace, name)))
    hpa = await _call(key, "read the HPA", "nothing changed", _get(api, hpa_path(namespace, name)))
    if ours is None:
        if hpa is None:
            raise HandOverError(key, "no HorizontalAutoscaler of that name: nothing to release")
        return HandOver(key=key, outcome=Outcome.ALREADY_RELEASED, replicas=_replicas(hpa))
    ours_uid = (ours.get("metadata") or {}).get("uid", "")
    manifest, dropped = released_hpa(ours)
    spec_metrics = (ours.get("spec") or {}).get("metrics")
    if spec_metrics and not manifest["spec"].get("metrics"):
        raise HandOverError(key, "none of its metrics has an autoscaling/v2 form (an HPA without metrics scales on "
                                 "CPU at 80 %): nothing changed")
    left_both = ("left: the HPA beside the HorizontalAutoscaler, which is paused (pyhpa.dev/paused); run the command "
                 "again, or delete the HPA and remove the pause")
    if hpa is None:
        if PAUSED_ANNOTATION not in _annotations(ours):
            await _call(key, "pause the HorizontalAutoscaler", "nothing changed", api.send_json(
                "PATCH", autoscaler_path(namespace, name),
                {"metadata": {"annotations": {PAUSED_ANNOTATION: "true", HANDOVER_PAUSE: "true"}}}, MERGE_PATCH))
        hpa = await _call(key, "create the HPA", "left: the HorizontalAutoscaler paused (pyhpa.dev/paused), no HPA; "
                          "run the command again, or remove the pause", api.send_json(
                              "POST", hpa_path(namespace), manifest))
        await _call(key, "mark the HorizontalAutoscaler", left_both, api.send_json(
            "PATCH", autoscaler_path(namespace, name),
            {"metadata": {"annotations": {RELEASED_TO: (hpa.get("metadata") or {}).get("uid", "")}}}, MERGE_PATCH))
    elif _annotations(ours).get(RELEASED_TO) != (hpa.get("metadata") or {}).get("uid"):
        raise HandOverError(key, "an HPA of that name exists already and was not made from this HorizontalAutoscaler "
                                 "by pyhpa release: nothing changed (delete or rename one of them)")
    synced = await _wait(lambda: _synced_or_none(api, hpa_path(namespace, name), by_conditions=True), timeout, clock)
    if synced is None:
        raise HandOverError(key, f"upstream's HPA controller has not synced the HPA within {timeout:g} s (is "
                                 f"kube-controller-manager running its horizontalpodautoscaling controller?); "
                                 f"{left_both}")
    await _carry(api, key, hpa_path(namespace, name), carried_status(ours), left_both, timeout, clock)
    await _call(key, "delete the HorizontalAutoscaler", left_both, api.send_json(
        "DELETE", autoscaler_path(namespace, name), {"apiVersion": "v1", "kind": "DeleteOptions",
                                                     "preconditions": {"uid": ours_uid}}))
    return HandOver(key=key, outcome=Outcome.RELEASED, replicas=_replicas(synced), dropped=tuple(dropped))


async def _carry(api: RawApi, key: str, path: str, carried: dict, left: str, timeout: float,
                 clock: Callable[[], float]) -> None:
    """Merge ``carried`` into the status at ``path`` once its controller has written one, until a read shows it
    there: the controller keeps what its status holds, but a status write of its that was under way when the
    patch landed writes it away (then the patch is sent again)."""
    if not carried:
        return

    async def there() -> bool:
        await _call(key, "carry lastScaleTime into the new status", left, api.send_json(
            "PATCH", path + "/status", {"status": carried}, MERGE_PATCH))
        await asyncio.sleep(POLL_SECONDS)
        obj = await _get(api, path)
        return obj is not None and all((obj.get("status") or {}).get(k) == v for k, v in carried.items())

    await _wait(there, timeout, clock)


def answer(err: ApiFailure) -> str:
    """What the API server answered, as the commands say it: its status code and message, or (code 0) that no
    answer came (a refused connection, a timeout)."""
    if err.code == 0:
        return f"no answer from the API server ({err.message})"
    return f"the API server answered {err.code} ({err.message})"


async def _call(key: str, step: str, left: str, call: Awaitable[Any]) -> Any:
    """``await call``; an ApiFailure becomes a HandOverError naming ``step``, the API server's answer and the state
    ``left``."""
    try:
        return await call
    except ApiFailure as err:
        raise HandOverError(key, f"could not {step}: {answer(err)}; {left}") from None


async def listed_keys(api: RawApi, collection: str) -> list[str]:
    """``namespace/name`` of every object of ``collection`` (``hpa_path(ns)`` or ``autoscaler_path(ns)``; ns "": every
    namespace), sorted, for ``--all``."""
    listed = await api.get_json(collection)
    return sorted(f"{(i.get('metadata') or {}).get('namespace')}/{(i.get('metadata') or {}).get('name')}"
                  for i in listed.get("items") or [])
