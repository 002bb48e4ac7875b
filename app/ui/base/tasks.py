"""Asyncio tasks started by the UI, with strong references (qasync 0.28 keeps none)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


class TaskSet:
    """`spawn(coro)` keeps the task alive until it ends; unexpected exceptions go to `on_error`."""

    def __init__(self, on_error: Callable[[str], None] | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._on_error = on_error

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        task = asyncio.get_event_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("task %s failed", task.get_name(), exc_info=error)
            if self._on_error is not None:
                self._on_error(f"{task.get_name()}: {error}")

    def __len__(self) -> int:
        return len(self._tasks)

    async def cancel_all(self) -> None:
        """Cancel every task (but the caller's) and wait until they have all ended."""
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
