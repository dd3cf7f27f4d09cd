"""A shard replica whose create or renewal of its Lease reached the API server but whose answer was lost (a client
timeout on a busy machine, a connection reset) keeps its Lease: it knows it again by the token it put on it
(``pyhpa.dev/shard-incarnation``), where it used to take its own Lease for another replica's of the same identity
(and exit), or to renew with a stale resourceVersion until it lost the Lease. A Lease of the same name made by
another process is still refused. On the API double with faults that carry a request out and lose its answer."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

from pyhpa.controller.scaleout.shards import (
    GROUP_LABEL,
    INCARNATION_ANNOTATION,
    ShardLost,
    ShardMembership,
    ShardSettings,
    lease_name,
)

LEASES = r"/apis/coordination\.k8s\.io/v1/namespaces/default/leases"
#: lease duration, renew deadline, retry period (s); the client gives up on an answer after CLIENT_TIMEOUT
TIMING = (2.0, 1.5, 0.25)
CLIENT_TIMEOUT = 0.3


def _membership(kube_double, identity: str = "ra") -> ShardMembership:
    client = kube_double.async_client(timeout=httpx2.Timeout(CLIENT_TIMEOUT))
    return ShardMembership(client, ShardSettings("default", "g", identity, *TIMING))


async def _until(predicate, what: str, task: asyncio.Task, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if task.done():
            task.result()  # raises what ended it
            raise AssertionError(f"the membership ended before {what}")
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def _stop(task: asyncio.Task) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_create_whose_answer_was_lost_is_known_as_its_own_and_the_replica_joins(kube_double):
    fault = kube_double.add_fault("POST", LEASES + "$", status=None, lost=True, times=1)
    m = _membership(kube_double)
    task = asyncio.create_task(m.run())
    try:
        await _until(lambda: m.joined.is_set(), "the replica joining its group", task)
        assert fault.hits == 1  # the first create was carried out and its answer lost
        assert not m.lost.is_set()
        lease = kube_double.get_object("coordination.k8s.io/v1", "leases", "default", lease_name("g", "ra"))
        assert lease["spec"]["holderIdentity"] == "ra"
        assert lease["metadata"]["annotations"][INCARNATION_ANNOTATION] == m._incarnation
        assert m.members == ("ra",)
    finally:
        await _stop(task)


async def test_a_renewal_whose_answer_was_lost_does_not_lose_the_lease(kube_double):
    m = _membership(kube_double)
    task = asyncio.create_task(m.run())
    try:
        await _until(lambda: m.joined.is_set(), "the replica joining its group", task)
        name = lease_name("g", "ra")
        fault = kube_double.add_fault("PUT", f"{LEASES}/{name}$", status=None, lost=True, times=1)
        await _until(lambda: fault.hits == 1, "a renewal carried out with its answer lost", task)
        before = kube_double.get_object("coordination.k8s.io/v1", "leases", "default", name)["spec"]["renewTime"]
        # renewed again since (on the Lease as the server has it), and still a member past a renew deadline
        await _until(lambda: kube_double.get_object("coordination.k8s.io/v1", "leases", "default", name)["spec"]
                     ["renewTime"] != before, "a renewal after the lost one", task)
        await asyncio.sleep(TIMING[1] + 0.5)
        assert not m.lost.is_set() and m.may_write()
    finally:
        await _stop(task)


async def test_a_lease_of_its_name_made_by_another_process_is_refused(kube_double):
    name = lease_name("g", "ra")
    async with kube_double.async_client() as client:  # another replica started with the same identity
        await client.create(Lease(metadata=ObjectMeta(name=name, namespace="default", labels={GROUP_LABEL: "g"},
                                                      annotations={INCARNATION_ANNOTATION: "someone-else"}),
                                  spec=LeaseSpec(holderIdentity="ra", leaseDurationSeconds=2)))
    m = _membership(kube_double)
    with pytest.raises(ShardLost, match="identity 'ra' is in use by another replica"):
        await asyncio.wait_for(m.run(), 30)
