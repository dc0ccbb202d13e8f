"""``DealtAssignor`` deals partitions in turn in member-id order, so a stream's consecutive explain groups land
on different workers (Faust's sticky assignor leaves blocks)."""

from __future__ import annotations

import faust
import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from faust.assignor import PartitionAssignor
from faust.assignor.client_assignment import ClientAssignment, ClientMetadata
from streamxai.kafka.assignor import DealtAssignor

TOPICS = ["t.arrivals", "t.explain-tasks"]


class Cluster:
    """The one call the assignor makes of aiokafka's ClusterMetadata."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.partitions))


def member(held: list[int]) -> ConsumerProtocolMemberMetadata:
    """A member subscribed to TOPICS that held partitions ``held`` of each."""
    meta = ClientMetadata(assignment=ClientAssignment(actives={t: held for t in TOPICS}, standbys={}),
                          url="http://127.0.0.1:6066", changelog_distribution={}, external_topic_distribution={},
                          topic_groups={})
    return ConsumerProtocolMemberMetadata(0, TOPICS, meta.dumps())


def dealt(assignor_class: type, partitions: int, held: dict[str, list[int]]) -> dict[str, dict[str, list[int]]]:
    """Each member's partitions of each topic, by ``assignor_class`` for members that held ``held``."""
    assignor = assignor_class(faust.App("assignor-test"))
    out = assignor._perform_assignment(Cluster(partitions), {m: member(h) for m, h in held.items()})
    return {m: dict(a.assignment) for m, a in out.items()}


def test_a_worker_that_joins_gets_every_other_partition_not_a_block():
    held = {"b-member": [], "a-member": [0, 1, 2, 3]}  # "a" ran alone until "b" joined
    sticky = dealt(PartitionAssignor, 4, held)
    assert sorted(sticky["a-member"]["t.arrivals"]) in ([0, 1], [2, 3])  # Faust's: a block stays
    got = dealt(DealtAssignor, 4, held)
    for t in TOPICS:  # copartitioned: the same partitions of both topics
        assert sorted(got["a-member"][t]) == [0, 2] and sorted(got["b-member"][t]) == [1, 3]


@pytest.mark.parametrize(("partitions", "workers"), [(4, 2), (4, 4), (8, 2), (8, 3), (8, 4)])
def test_consecutive_partitions_go_to_different_workers_and_the_split_is_even(partitions, workers):
    held = {f"m{i}": [] for i in range(workers)}
    held["m0"] = list(range(partitions))
    got = dealt(DealtAssignor, partitions, held)
    owner = {p: m for m, topics in got.items() for p in topics["t.explain-tasks"]}
    assert sorted(owner) == list(range(partitions))
    counts = sorted(len(topics["t.explain-tasks"]) for topics in got.values())
    assert counts[-1] - counts[0] <= 1
    # a stream's explain groups: up to `workers` consecutive partitions, each on its own worker
    for first in range(partitions):
        groups = [(first + g) % partitions for g in range(workers)]
        if partitions % workers == 0 or first + workers <= partitions:
            assert len({owner[p] for p in groups}) == workers, (first, owner)


def test_the_deal_follows_member_ids_not_the_order_they_are_listed_in():
    one = dealt(DealtAssignor, 4, {"z": [0, 1], "a": [2, 3]})
    other = dealt(DealtAssignor, 4, {"a": [], "z": []})
    assert one == other and sorted(one["a"]["t.arrivals"]) == [0, 2]
