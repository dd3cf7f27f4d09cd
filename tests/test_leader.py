"""Leader election on a Lease, through the HTTP API double."""

from __future__ import annotations

import asyncio

from lightkube.resources.coordination_v1 import Lease

from pyhpa.controller.scaleout.leader import LeaderElector, LeaseSettings

FAST = dict(namespace="default", name="pyhpa", lease_duration_seconds=1.5, renew_deadline_seconds=1.0,
            retry_period_seconds=0.2)
#: a holder that must keep its Lease through the test: renewals every 0.2 s, lost only after 4 s without one (a
#: stall of the test's loop on a busy machine is far shorter)
STEADY = {**FAST, "lease_duration_seconds": 6.0, "renew_deadline_seconds": 4.0}


async def _wait(event: asyncio.Event, timeout: float = 20.0) -> None:
    await asyncio.wait_for(event.wait(), timeout)


async def test_one_leader_then_takeover_after_the_holder_dies(kube_double):
    a = LeaderElector(kube_double.async_client(), LeaseSettings(identity="a", **STEADY))
    b = LeaderElector(kube_double.async_client(), LeaseSettings(identity="b", **STEADY))
    ta = asyncio.create_task(a.run())
    await _wait(a.acquired)
    tb = asyncio.create_task(b.run())
    await asyncio.sleep(7.0)  # longer than the lease duration: a keeps renewing, b must not take over
    assert a.may_write() and not b.acquired.is_set() and not b.may_write()
    ta.cancel()  # a dies without releasing
    await _wait(b.acquired)
    assert b.may_write()
    assert not a.may_write()  # a's last renewal is older than its renew deadline
    lease = await kube_double.async_client().get(Lease, "pyhpa", namespace="default")
    assert lease.spec.holderIdentity == "b" and lease.spec.leaseTransitions == 1
    tb.cancel()
    assert kube_double.invalid_requests == []


async def test_holder_that_cannot_renew_stops_writing(kube_double):
    a = LeaderElector(kube_double.async_client(), LeaseSettings(identity="a", **FAST))
    task = asyncio.create_task(a.run())
    await _wait(a.acquired)
    kube_double.add_fault(method="PUT", path_regex=r".*/leases/pyhpa$", status=503)
    await _wait(a.lost)
    assert not a.may_write()
    await task  # run() returns after losing
    assert kube_double.invalid_requests == []


async def test_release_lets_a_standby_take_over_quickly(kube_double):
    a = LeaderElector(kube_double.async_client(), LeaseSettings(identity="a", **FAST))
    ta = asyncio.create_task(a.run())
    await _wait(a.acquired)
    await a.release()
    ta.cancel()
    b = LeaderElector(kube_double.async_client(), LeaseSettings(identity="b", **FAST))
    tb = asyncio.create_task(b.run())
    await _wait(b.acquired, timeout=10)
    tb.cancel()
    assert not a.may_write()
