"""`Event`: a Qt-free signal for the viewer's state. Subscribers run synchronously, in the
order they connected, on the thread that changes the state (the GUI thread)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Event(Generic[T]):
    def __init__(self) -> None:
        self._callbacks: list[Callable[[T], object]] = []

    def connect(self, callback: Callable[[T], object]) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable[[T], object]) -> None:
        self._callbacks.remove(callback)

    def emit(self, value: T) -> None:
        """Call every subscriber; one that raises does not keep the others from hearing of the
        change (the first error is raised once they all ran)."""
        error: BaseException | None = None
        for callback in list(self._callbacks):
            try:
                callback(value)
            except Exception as e:
                error = error or e
        if error is not None:
            raise error
