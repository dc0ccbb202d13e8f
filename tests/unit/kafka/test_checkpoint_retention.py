"""What a key keeps: its newest checkpoint and the newest one a commit covers, so that a key
writing checkpoints faster than the worker commits still has one a SIGKILL restart restores."""

from __future__ import annotations

from streamxai.handlers import Source
from streamxai.kafka.checkpoint_seal import CheckpointSeal
from streamxai.kafka.checkpoints import FileCheckpointStore
from streamxai.kafka.committed_offsets import CommittedOffsets

KEY = b"test-checkpoint-key-0123456789"


def kept(store, kind=b"change"):
    """The offsets of the checkpoints kept for key ``s``, newest first."""
    newest, previous = store._paths("change", b"s")
    return [CheckpointSeal.source(p.read_bytes())[2] if p.exists() else None for p in (newest, previous)]


def test_a_key_keeps_the_newest_committed_checkpoint_beside_its_newest(tmp_path):
    commits = CommittedOffsets()
    store = FileCheckpointStore(tmp_path, 1, secret=KEY, commits=commits)
    at = lambda off: Source("feed", 2, off)  # noqa: E731
    store.save("change", b"s", {"n": 10}, at(10))
    commits.record({("feed", 2): 11})  # the message at 10 is committed: its checkpoint is safe
    store.save("change", b"s", {"n": 20}, at(20))
    assert kept(store) == [20, 10]
    store.save("change", b"s", {"n": 30}, at(30))  # 20 is not committed: replaced, 10 stays
    assert kept(store) == [30, 10]
    # a SIGKILL now resumes at 11: the committed checkpoint is there to restore
    assert store.load("change", b"s", "feed", 2, before_offset=11) == ({"n": 10}, 10)
    commits.record({("feed", 2): 25, ("feed", 3): 1000})  # another partition's commit covers nothing here
    store.save("change", b"s", {"n": 40}, at(40))  # 30 is not committed
    assert kept(store) == [40, 10]
    commits.record({("feed", 2): 41})
    store.save("change", b"s", {"n": 50}, at(50))  # 40 is: it becomes the previous one
    assert kept(store) == [50, 40]
    assert store.load("change", b"s", "feed", 2, before_offset=41) == ({"n": 40}, 40)
    assert store.load("change", b"s", "feed", 2) == ({"n": 50}, 50)


def test_without_commits_known_a_key_keeps_its_two_newest(tmp_path):
    store = FileCheckpointStore(tmp_path, 1, secret=KEY)  # tests, the in-process runner
    for off in (10, 20, 30):
        store.save("change", b"s", {"n": off}, Source("feed", 2, off))
    assert kept(store) == [30, 20]
    # with commits known but none yet on the partition (just started), nothing is safe yet
    commits = CommittedOffsets()
    waiting = FileCheckpointStore(tmp_path / "w", 1, secret=KEY, commits=commits)
    for off in (10, 20, 30):
        waiting.save("change", b"s", {"n": off}, Source("feed", 2, off))
    assert kept(waiting) == [30, None]


def test_a_checkpoint_written_before_this_worker_is_judged_by_its_header(tmp_path):
    old = FileCheckpointStore(tmp_path, 1, secret=KEY)  # an earlier run, with no commits known
    old.save("change", b"s", {"n": 10}, Source("feed", 2, 10))
    old.save("change", b"s", {"n": 20}, Source("feed", 2, 20))
    commits = CommittedOffsets()
    commits.record({("feed", 2): 15})
    store = FileCheckpointStore(tmp_path, 1, secret=KEY, commits=commits)
    store.save("change", b"s", {"n": 30}, Source("feed", 2, 30))  # 20 is past the commit: replaced
    assert kept(store) == [30, 10]
    assert store.load("change", b"s", "feed", 2, before_offset=15) == ({"n": 10}, 10)


def test_a_checkpoint_a_commit_covers_as_it_is_written_is_kept_alone(tmp_path):
    # written when the worker stops (after its last commit) or when it evicts a quiet stream: the
    # one a restart restores, so the previous one is not kept beside it
    commits = CommittedOffsets()
    store = FileCheckpointStore(tmp_path, 1, secret=KEY, commits=commits)
    at = lambda off: Source("feed", 2, off)  # noqa: E731
    commits.record({("feed", 2): 11})
    store.save("change", b"s", {"n": 10}, at(10))
    assert kept(store) == [10, None]
    store.save("change", b"s", {"n": 20}, at(20))  # not covered yet: 10 stays beside it
    assert kept(store) == [20, 10]
    commits.record({("feed", 2): 31})
    store.save("change", b"s", {"n": 30}, at(30))
    assert kept(store) == [30, None]
    assert store.load("change", b"s", "feed", 2, before_offset=31) == ({"n": 30}, 30)
