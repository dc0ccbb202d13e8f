"""How the workers of a consumer group share the partitions: dealt in turn, partition ``p`` to
the ``p mod n``-th of the ``n`` workers in member-id order, whatever each held before. A stream
sends its explain groups to consecutive partitions of explain-tasks
(:meth:`~streamxai.handlers.ModelHandler` ``_tasks``), so dealt partitions put them on as many
different workers as there are groups, up to the workers, and spread streams hashed onto the
partitions evenly. Faust's own assignor keeps what each worker held: after workers join one at a
time they hold blocks of consecutive partitions, and a stream's groups then often share one
worker while another has none of them. A worker's partitions may move on every rebalance; its
state moves with them through checkpoints and replay, as on any other move."""

from __future__ import annotations

from typing import Any

from faust.assignor import PartitionAssignor
from faust.assignor.client_assignment import ClientAssignment, ClientMetadata

__all__ = ["DealtAssignor"]


class DealtAssignor(PartitionAssignor):  # type: ignore[misc]  # Faust's classes are untyped here
    """Faust's partition assignor with every partition dealt afresh in member-id order (set as
    the app's ``PartitionAssignor``). Faust's copartitioning holds: partition ``p`` of every
    topic a worker reads together goes to the same worker.

    >>> import faust
    >>> app = faust.App("doc", PartitionAssignor=DealtAssignor)
    >>> app.conf.PartitionAssignor is DealtAssignor
    True
    """

    @classmethod
    def _get_client_metadata(cls, metadata: Any) -> ClientMetadata:
        client = super()._get_client_metadata(metadata)
        # what the member held is left out, so the copartitioned assignor deals every partition
        client.assignment = ClientAssignment(actives={}, standbys={})
        return client

    def _perform_assignment(self, cluster: Any, member_metadata: Any) -> Any:
        # the copartitioned assignor deals in the members' order: sorted, every leader deals alike
        return super()._perform_assignment(cluster, dict(sorted(member_metadata.items())))
