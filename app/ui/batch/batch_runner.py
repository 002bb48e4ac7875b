"""BatchRunner: the viewer's adapter over `app.pipeline.batch.BatchJob`.

Each job feeds on a thread of its own (reading files and waiting for window slots never
touch the GUI thread); everything it reports comes back through the bridge, so every
signal here fires on the GUI thread.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QObject, Signal

from app.inference.core.session import TritonSession
from app.inference.result import InferenceResult
from app.pipeline.batch import BatchCounts, BatchJob, VideoPolicy
from app.pipeline.thumbnails import THUMB_SIZE
from app.sources.files import file_identity
from app.ui.base.bridge import GuiBridge

DEFAULT_WINDOW = 8  # a batch's requests in flight: leaves the session's other slots to live streams


class BatchRunner(QObject):
    started = Signal(int, int)  # job id, inputs
    progress = Signal(int, object)  # job id, BatchCounts
    finished = Signal(int, object, float)  # job id, BatchCounts, seconds
    # job id, key (source), thumbnail (RGB uint8), FileIdentity of what was read (None: unknown)
    entry_added = Signal(int, str, object, object)
    result = Signal(int, object)  # job id, every result of every job, local failures included

    def __init__(self, bridge: GuiBridge, window: int = DEFAULT_WINDOW) -> None:
        super().__init__()
        self._bridge = bridge
        self.window = window
        self._ids = itertools.count(1)
        self._jobs: dict[int, BatchJob] = {}
        self._started: dict[int, float] = {}
        self._finished: set[int] = set()  # jobs whose "finished" reached the GUI thread
        self._session: TritonSession | None = None

    def set_session(self, session: TritonSession | None) -> None:
        self._session = session

    def active(self) -> bool:
        """A job has not finished yet, as far as the GUI thread knows (its last results and
        its "finished" may still be queued behind the job's own end). Also asked by the
        connection manager's thread: it reads a copy of the ids (one step under the GIL)."""
        return any(job_id not in self._finished for job_id in list(self._jobs))

    def latest_job(self) -> BatchJob | None:
        """The job started last (running or not), None before the first."""
        return self._jobs[max(self._jobs)] if self._jobs else None

    def latest_counts(self) -> BatchCounts | None:
        job = self.latest_job()
        return job.counts() if job is not None else None

    def start(self, paths: list[str]) -> int:
        """Start a job on the current session (the caller checks there is one)."""
        assert self._session is not None
        job_id = next(self._ids)
        wrap = self._bridge.wrap
        added = wrap(functools.partial(self.entry_added.emit, job_id))
        job = BatchJob(
            self._session,
            paths,
            wrap(self._on_result(job_id)),
            window=self.window,
            videos=VideoPolicy.REFUSE,
            on_thumbnail=self._thumbnail_with_identity(added),
            on_started=wrap(lambda total: self.started.emit(job_id, total)),
            on_finished=wrap(self._on_finished(job_id)),
        )
        self._jobs[job_id] = job
        self._started[job_id] = time.monotonic()
        job.start()
        return job_id

    @staticmethod
    def _thumbnail_with_identity(emit: Callable[..., None]) -> Callable[[str, np.ndarray], None]:
        def thumbnail(source: str, image: np.ndarray) -> None:
            # The feeding thread, right after the image was read: stat here, never on the GUI
            # thread. The result of this request belongs to this version of the file.
            emit(source, image, file_identity(source))

        return thumbnail

    def cancel(self, job_id: int | None = None) -> None:
        """Cancel one job (default: all). Returns at once; their "finished" follows."""
        for jid, job in self._jobs.items():
            if job_id is None or jid == job_id:
                job.cancel()

    def _on_result(self, job_id: int) -> Callable[[InferenceResult], None]:
        def deliver(result: InferenceResult) -> None:  # GUI thread (through the bridge)
            self.result.emit(job_id, result)
            job = self._jobs.get(job_id)
            if job is not None:
                self.progress.emit(job_id, job.counts())

        return deliver

    def _on_finished(self, job_id: int) -> Callable[[BatchCounts], None]:
        def finish(counts: BatchCounts) -> None:  # GUI thread (through the bridge)
            seconds = time.monotonic() - self._started.get(job_id, time.monotonic())
            self._finished.add(job_id)
            self.finished.emit(job_id, counts, seconds)

        return finish


PLACEHOLDER = np.full(
    (THUMB_SIZE, THUMB_SIZE, 3), 90, np.uint8
)  # thumbnail of an input that could not be read
