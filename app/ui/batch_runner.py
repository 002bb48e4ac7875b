"""BatchRunner: files and folders -> requests, with bounded concurrency, progress and Cancel.

One asyncio task per job on the qasync loop. Walking folders and reading images run on
the executor; only a ~96 px thumbnail and the results are kept (the full image is
re-read when the user selects it). Results come back through the bridge: `on_result`
is called on the GUI thread and frees a slot.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Signal

from app.inference.images import read_image
from app.inference.result import InferenceResult, Status
from app.inference.session import TritonSession
from app.sources.files import InputItem, iter_image_paths
from app.ui.tasks import TaskSet
from app.ui.thumbnail_strip import THUMB_SIZE, make_thumbnail

PLACEHOLDER = np.full((THUMB_SIZE, THUMB_SIZE, 3), 90, np.uint8)  # thumbnail of an unreadable file


@dataclass(frozen=True)
class BatchTag:
    """The `tag` of a batch request: which job and which entry (the path) it belongs to."""

    job: int
    key: str


@dataclass(eq=False)
class Job:
    id: int
    paths: list[str]
    total: int = 0
    ok: int = 0
    failed: int = 0
    cancelled: int = 0
    started: float = field(default_factory=time.monotonic)
    in_flight: set[str] = field(default_factory=set)
    ended_early: set[str] = field(default_factory=set)  # ended before submit() returned its id to us
    slot_freed: asyncio.Event = field(default_factory=asyncio.Event)
    finished: bool = False
    all_done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    @property
    def done(self) -> int:
        return self.ok + self.failed + self.cancelled


def load_image(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(image, thumbnail). Executor thread. Raises ValueError naming the file and the cause."""
    image = read_image(path)
    return image, make_thumbnail(image)


def failed_result(path: str, error: str, status: Status = Status.ERROR) -> InferenceResult:
    """The entry of an input that was never sent (unreadable, not an image, cancelled)."""
    return InferenceResult(request_id="-", status=status, source=path, error=error)


class BatchRunner(QObject):
    started = Signal(int, int)  # job id, total
    progress = Signal(int, int, int)  # job id, done, total
    finished = Signal(int, int, int, int, int, float)  # job, total, ok, failed, cancelled, seconds
    entry_added = Signal(str, object)  # key (path), thumbnail (RGB uint8)
    local_result = Signal(object)  # an input that failed before being sent (GUI thread)

    def __init__(self, executor: Executor, tasks: TaskSet, post: Callable[[InferenceResult], None]) -> None:
        super().__init__()
        self._executor = executor
        self._tasks = tasks
        self._post = post  # the bridge's post: results reach the GUI thread through it
        self._ids = itertools.count(1)
        self._jobs: dict[int, Job] = {}
        self._session: TritonSession | None = None
        self._prefix = uuid.uuid4().hex[:4]

    def set_session(self, session: TritonSession | None) -> None:
        self._session = session

    def active(self) -> bool:
        return any(not j.finished for j in self._jobs.values())

    def latest_job(self) -> Job | None:
        return self._jobs[max(self._jobs)] if self._jobs else None

    def start(self, paths: list[str]) -> Job:
        job = Job(next(self._ids), list(paths))
        self._jobs[job.id] = job
        job.task = self._tasks.spawn(self._run(job), name=f"batch {job.id}")
        return job

    def cancel(self, job_id: int | None = None) -> None:
        """Cancel one job (default: all): stop submitting and cancel its requests in flight."""
        for job in list(self._jobs.values()):
            if (job_id is None or job.id == job_id) and job.task is not None and not job.task.done():
                job.task.cancel()

    def on_result(self, result: InferenceResult) -> None:
        """Called on the GUI thread for every result; counts those of our jobs."""
        tag = result.tag
        if not isinstance(tag, BatchTag):
            return
        job = self._jobs.get(tag.job)
        if job is None or job.finished:
            return  # e.g. the cancelled requests of a cancelled job: already counted
        if result.request_id in job.in_flight:
            job.in_flight.discard(result.request_id)
        else:
            job.ended_early.add(result.request_id)
        self._count(job, result.status)

    # -- the job's task ------------------------------------------------------------
    async def _run(self, job: Job) -> None:
        loop = asyncio.get_running_loop()
        submitted = 0
        try:
            items: list[InputItem] = await loop.run_in_executor(
                self._executor, lambda: list(iter_image_paths(job.paths))
            )
            job.total = len(items)
            job.started = time.monotonic()
            self.started.emit(job.id, job.total)
            for item in items:
                await self._submit_one(loop, job, item)
                submitted += 1
            if job.done < job.total:
                await job.all_done.wait()
        except asyncio.CancelledError:
            self._cancel_rest(job, items_left=job.total - submitted)
            raise
        finally:
            self._finish(job)

    async def _submit_one(self, loop: asyncio.AbstractEventLoop, job: Job, item: InputItem) -> None:
        key = str(item.path)
        if item.kind != "image":
            error = item.error or (
                f"{key}: a video file; play it with File > Open video… (live preview), "
                "or run `python -m app infer` on it for every frame"
            )
            self._fail_local(job, key, error)
            return
        # Bounded concurrency: never more of our requests in flight than the session's window.
        session = self._session
        while session is not None and len(job.in_flight) >= session.max_in_flight:
            job.slot_freed.clear()
            await job.slot_freed.wait()
        try:
            image, thumb = await loop.run_in_executor(self._executor, load_image, item.path)
        except (ValueError, OSError) as e:
            self._fail_local(job, key, str(e))
            return
        self.entry_added.emit(key, thumb)
        session = self._session
        if session is None:
            self._fail_local(job, key, f"{key}: not connected to a server")
            return
        tag = BatchTag(job.id, key)
        submit = functools.partial(session.submit, image, self._post, source=key, tag=tag)
        try:
            rid = submit(block=False)
            if rid is None:  # the window is shared with other jobs: wait for a slot off the GUI thread
                rid = await loop.run_in_executor(self._executor, functools.partial(submit, wait_s=30.0))
        except Exception as e:  # the session closed under us (server switch)
            self._fail_local(job, key, f"{key}: not sent: {e}")
            return
        if rid is None:
            self._fail_local(job, key, f"{key}: not sent: no free slot within 30 s")
            return
        if rid in job.ended_early:
            job.ended_early.discard(rid)
        else:
            job.in_flight.add(rid)

    def _count(self, job: Job, status: Status) -> None:
        if status is Status.OK:
            job.ok += 1
        elif status is Status.CANCELLED:
            job.cancelled += 1
        else:
            job.failed += 1
        self.progress.emit(job.id, job.done, job.total)
        job.slot_freed.set()
        if job.total and job.done >= job.total:
            job.all_done.set()

    def _fail_local(self, job: Job, key: str, error: str) -> None:
        self.entry_added.emit(key, PLACEHOLDER)
        self.local_result.emit(failed_result(key, error))
        self._count(job, Status.ERROR)

    def _cancel_rest(self, job: Job, items_left: int) -> None:
        session = self._session
        for rid in list(job.in_flight):
            if session is not None:
                session.cancel(rid)  # its CANCELLED result still comes through the bridge (logged)
        job.cancelled += len(job.in_flight) + max(items_left, 0)
        job.in_flight.clear()

    def _finish(self, job: Job) -> None:
        if job.finished:
            return
        job.finished = True
        seconds = time.monotonic() - job.started
        self.finished.emit(job.id, job.total, job.ok, job.failed, job.cancelled, seconds)
