"""Answers that may be coroutines: a hook may be `async def`; its coroutine is run to its answer here.

A plugin waits on nothing (no I/O, no timers, one request at a time), so no
event loop is needed: the coroutine is stepped until it returns, the same way
natively and inside a component. A coroutine may await other coroutines (and
`asyncio.sleep(0)`); one that awaits what only an event loop can finish (a
timer, a task, a future) is refused with a `TypeError` naming the hook, never
answered with nothing.
"""

from __future__ import annotations

import inspect
from typing import Any


def is_awaitable(value: Any) -> bool:
    """Whether `value` is a coroutine or another awaitable."""
    return inspect.isawaitable(value)


def resolved(value: Any, hook: str) -> Any:
    """`value`, or what it returns if it is awaitable; `hook` (e.g. `reconcile()`) names it in errors."""
    if not inspect.isawaitable(value):
        return value
    steps = value.__await__()
    try:
        while True:
            waiting_on = steps.send(None)
            if waiting_on is not None:
                steps.close()
                raise TypeError(
                    f"{hook} awaited {type(waiting_on).__name__}, which needs an event loop; "
                    "a plugin's hook may await other coroutines, not timers, tasks or I/O"
                )
    except StopIteration as done:
        return done.value
    except RuntimeError as e:
        if "no running event loop" not in str(e):
            raise
        raise TypeError(
            f"{hook} awaited something that needs an event loop ({e}); "
            "a plugin's hook may await other coroutines, not timers, tasks or I/O"
        ) from e
