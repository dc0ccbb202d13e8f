"""Coroutines run from their first step in the caller's turn of the event loop, and in a task of
their own only from where they first wait: most of a worker's hand-overs end without waiting,
and a task and a turn of the loop each would cost more than their work."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["resume", "whole"]


async def resume(coro: Any, waits_on: Any) -> Any:
    """Run ``coro`` on, as a task would, from where its first step stopped: waiting on the
    future ``waits_on`` (None: it only yielded). A cancellation of the task running this goes
    into ``coro`` at its wait."""
    while True:
        try:
            if waits_on is None:
                await asyncio.sleep(0)
            elif not waits_on.done():
                await asyncio.wait((waits_on,))
        except asyncio.CancelledError as e:
            if waits_on is not None:
                waits_on.cancel()
            try:
                waits_on = coro.throw(e)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            waits_on = coro.send(None)  # the awaiting code reads the future's outcome itself
        except StopIteration as stop:
            return stop.value


async def whole(coro: Any) -> None:
    """Run ``coro`` to its end, whatever cancels the caller meanwhile (a stop, a rebalance); a
    cancelled caller waits for it, then is cancelled. A record's handling and the hand-over of
    its outputs thus happen whole, so a checkpoint never holds a record whose outputs were unsent.

    >>> async def waits(log):
    ...     log.append("first step")
    ...     await asyncio.sleep(0.01)
    ...     log.append("end")
    >>> async def stopped(log):
    ...     task = asyncio.ensure_future(whole(waits(log)))
    ...     await asyncio.sleep(0)
    ...     task.cancel()
    ...     try:
    ...         await task
    ...     except asyncio.CancelledError:
    ...         log.append("cancelled")
    ...     return log
    >>> asyncio.run(stopped([]))
    ['first step', 'end', 'cancelled']
    """
    try:
        waits_on = coro.send(None)
    except StopIteration:
        return
    task = asyncio.ensure_future(resume(coro, waits_on))
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as e:
            if task.done() and not task.cancelled():
                break
            cancelled = e
    task.result()
    if cancelled is not None:
        raise cancelled
