"""SharedReads: the images of an A/B batch compare read and decoded once for both sides.

Each side keeps its own batch job (its own window and feeding thread: a slow B never holds A
back); whichever side reaches a file first decodes it, the other takes the same decoded
image (or the same failure) and it is dropped. When the sides drift apart, what the faster
one decoded waits for the slower one up to `budget_bytes`; beyond that the slower side
decodes for itself, so memory stays bounded and neither side waits for the other.
Decoded no smaller than the larger of the two models needs.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from app.sources.images import DecodedImage, read_image_for

BUDGET_BYTES = 256 * 2**20  # decoded images kept for the slower side, at most


def common_min_side(sides: Iterable[int | None]) -> int | None:
    """The decode size both models can use (None: the full image, for either needing it)."""
    values = list(sides)
    return None if not values or any(v is None for v in values) else max(v for v in values if v is not None)


@dataclass(eq=False)
class _Entry:
    result: concurrent.futures.Future[DecodedImage] = field(default_factory=concurrent.futures.Future)
    taken: set[Hashable] = field(default_factory=set)
    nbytes: int = 0


class SharedReads:
    """`reader(side)` gives each side's job its image reader (any thread)."""

    def __init__(
        self,
        sides: Iterable[Hashable],
        min_side: int | None,
        budget_bytes: int = BUDGET_BYTES,
        read: Callable[[Path, int | None], DecodedImage] = read_image_for,
    ) -> None:
        self.min_side = min_side
        self.budget_bytes = budget_bytes
        self._read = read
        self._lock = threading.Lock()
        self._active = set(sides)  # the sides that may still ask for images
        self._seen: dict[Hashable, set[Path]] = {side: set() for side in self._active}
        self._entries: dict[Path, _Entry] = {}
        self._bytes = 0
        self.reads = 0  # files read and decoded (a figure for tests and benchmarks)

    def reader(self, side: Hashable) -> Callable[[str | Path, int | None], DecodedImage]:
        return lambda path, _min_side: self.read(side, Path(path))

    def read(self, side: Hashable, path: Path) -> DecodedImage:
        """The decoded image (ValueError naming the file, as read_image_for)."""
        with self._lock:
            entry = self._entries.get(path)
            if entry is not None and side not in entry.taken:
                entry.taken.add(side)  # decoded (or being decoded) by another side: share it
                self._drop_if_served(path, entry)
                shared = True
            else:
                # Kept for the sides that have not read it yet (within the budget).
                entry = _Entry(taken={side} | {s for s in self._active if path in self._seen[s]})
                if (
                    path not in self._entries
                    and self._active - entry.taken
                    and self._bytes < self.budget_bytes
                ):
                    self._entries[path] = entry
                shared = False
            self._seen[side].add(path)
        if shared:
            return entry.result.result()  # waits while the first side still decodes it
        try:
            decoded = self._read(path, self.min_side)
        except BaseException as e:
            entry.result.set_exception(e)
            raise
        finally:
            with self._lock:
                self.reads += 1
        with self._lock:
            entry.nbytes = decoded.image.nbytes
            if self._entries.get(path) is entry:
                self._bytes += entry.nbytes
        entry.result.set_result(decoded)
        return decoded

    def done(self, side: Hashable) -> None:
        """`side` asks for nothing more (its job ended): what only it was awaited for goes."""
        with self._lock:
            self._active.discard(side)
            for path, entry in list(self._entries.items()):
                self._drop_if_served(path, entry)

    @property
    def kept_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def _drop_if_served(self, path: Path, entry: _Entry) -> None:
        """(Lock held.) Every side still asking has taken it: it goes."""
        if self._active - entry.taken:
            return
        if self._entries.pop(path, None) is entry:
            self._bytes -= entry.nbytes
