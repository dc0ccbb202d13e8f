"""DeadLetterWatch: what it keeps of a stream it watches (a worker sees every stream's first
messages, under max_live_streams too), and that it still finds a stream whose events are refused."""

from __future__ import annotations

import gc
import tracemalloc

from streamxai.handlers.dead_letter_watch import DeadLetterWatch
from streamxai.handlers.out import Out

BAD = Out("dead-letters", b"s", b'{"error": "BadValue: size is 1.5"}', reason="bad_value")
OK = Out("explain-tasks", b"s", b"{}")


def bytes_per_key(watch: DeadLetterWatch, keys: list[bytes], outs: list[Out]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3):  # three messages of each stream, fewer than the watch's first
            for key in keys:
                watch.observe(key, outs)
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - before) / len(keys)
    finally:
        tracemalloc.stop()


def test_a_stream_without_dead_letters_costs_the_watch_a_count_only():
    keys = [f"stream-{i}".encode() for i in range(2000)]  # made before the measure: the worker has them anyway
    clean = bytes_per_key(DeadLetterWatch(), keys, [OK])
    refused = bytes_per_key(DeadLetterWatch(), keys, [BAD])
    assert clean < 150, clean  # a dict entry and an int, not a counter and a dict of examples
    assert refused > 2 * clean  # those a stream with dead letters has


def test_a_stream_whose_events_are_mostly_refused_is_logged_once(caplog):
    watch = DeadLetterWatch(first=10)
    got = [watch.observe(b"s", [BAD] if i % 4 else [OK]) for i in range(12)]
    assert got.count("bad_value") == 1 and got.index("bad_value") == 7  # the 6th dead letter of 8 messages
    assert "6 of its first 8 events" in caplog.text
    assert all(watch.observe(f"k{i}".encode(), [OK]) is None for i in range(10))  # the others are quiet
