"""How the workers of a consumer group share the partitions: partition ``p`` goes to the
``p mod n``-th of the ``n`` workers in member-id order, whatever each held before. A stream's
explain groups go to consecutive partitions, so they land on as many workers as there are
groups; Faust's own assignor, which keeps what each worker held, often puts them on one."""

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
