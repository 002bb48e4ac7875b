"""`--trace all|N|slowest:N`, `--trace-output FILE`, `--trace-tensors FILE` of infer, bench,
evaluate and compare: the command line's side of the request X-ray (docs/traces.md).

`TraceRun` traces every session the command opens (`attach`, right after it opened), polls
their tracers on a thread of its own, and:
- holds back the JSONL record of a traced request until its trace is known, then writes
  it with its `trace` object (`hold`; slowest:N holds only the N slowest so far, the others
  are written as they fall out, without one);
- at the end (`finish`, before the summary) writes the Chrome trace-event file and the
  perf_analyzer data file of the traced requests' tensors (with the perf_analyzer command
  line that replays them), and says on stderr where the slowest ones' time went.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.commands.common import UsageError, eprint, say_once
from app.inference.core.session import TritonSession
from app.inference.tracing.chrome import write_chrome_trace
from app.inference.tracing.diagnosis import breakdown, diagnose
from app.inference.tracing.matching import WAIT_S
from app.inference.tracing.perf_analyzer import InputDataError, replay_command, write_input_data
from app.inference.tracing.record import trace_record
from app.inference.tracing.spans import RequestTrace
from app.inference.tracing.tracer import SelectionError, SelectionKind, SlowestKept, Tracer, TraceSelection
from app.system.atomic_files import describe_write_error

POLL_S = 0.1
# At the end, how long the server's last traces are waited for: as long as a trace is waited
# for during the run (a loaded server writes its trace files late; only what is still missing
# waits, so a run whose traces are all in ends at once).
SETTLE_S = WAIT_S
SLOWEST_SAID = 3  # requests whose breakdown is said on stderr at the end
FINDINGS_SAID = 2  # the diagnosis of each: its biggest findings
MAX_TENSORS = 100  # traced requests whose tensors --trace-tensors writes, at most
MAX_EARLY = 1024  # traces kept for records not written yet
# At most this many traces kept for the Chrome file (the first ones; slowest:N keeps N).
MAX_KEPT = 100_000


def selection_argument(text: str) -> TraceSelection:
    try:
        return TraceSelection.parse(text)
    except SelectionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_trace_arguments(p: argparse.ArgumentParser, path_type: Callable[[str], str]) -> None:
    group = p.add_argument_group("request tracing (client and server, from Triton's own traces)")
    group.add_argument(
        "--trace",
        type=selection_argument,
        default=None,
        metavar="WHICH",
        help="trace requests: all, N (the first N) or slowest:N (all traced, the N slowest kept); "
        "their records get a `trace` object",
    )
    group.add_argument(
        "--trace-output",
        type=path_type,
        default=None,
        metavar="FILE",
        help="the traced requests as Chrome trace-event JSON (open it in ui.perfetto.dev); "
        "alone, it traces all",
    )
    group.add_argument(
        "--trace-tensors",
        type=path_type,
        default=None,
        metavar="FILE",
        help="the traced requests' exact tensors as perf_analyzer --input-data JSON "
        "(the command that replays them is printed)",
    )


@dataclass
class _Held:
    """A record waiting for the traces of its requests (request id -> the part it goes in)."""

    record: dict[str, Any]
    waiting: dict[str, str | None]
    then: Callable[[dict[str, Any]], None]  # writes it


class TraceRun:
    def __init__(
        self,
        selection: TraceSelection,
        output: str | None,
        tensors: str | None,
        write: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.selection = selection
        self.output = output
        self.tensors = tensors
        self.write = write  # where held records go once their trace is known
        self._tracers: list[tuple[TritonSession, Tracer]] = []
        self._held: dict[str, _Held] = {}  # by request id (a compared pair: by both)
        self._early: OrderedDict[str, RequestTrace] = OrderedDict()  # traces before their record
        self._with_tensors = 0
        self._lock = threading.Lock()
        self._kept = SlowestKept(selection.count if selection.kind is SelectionKind.SLOWEST else None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name="trace poller", daemon=True)

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, write: Callable[[dict[str, Any]], None] | None = None
    ) -> TraceRun | None:
        selection = getattr(args, "trace", None)
        output, tensors = getattr(args, "trace_output", None), getattr(args, "trace_tensors", None)
        if selection is None and output is None and tensors is None:
            return None
        if selection is None:
            selection = TraceSelection.parse("all")
        return cls(selection, output, tensors, write)

    # -- sessions ------------------------------------------------------------------
    def attach(self, session: TritonSession) -> None:
        """Trace `session`'s requests from now on (blocking: the server's trace settings)."""
        selection = TraceSelection(self.selection.kind, self.selection.count)  # each its own count
        tracer = session.start_tracing(selection)
        tracer.keep_inputs = self.tensors is not None
        for note in tracer.notes:
            say_once(f"--trace: {note}")
        with self._lock:
            self._tracers.append((session, tracer))
            if not self._thread.is_alive() and not self._stop.is_set():
                self._thread.start()

    # -- records -------------------------------------------------------------------
    def hold(self, request_id: str | None, record: dict[str, Any]) -> bool:
        """Keep `record` until its request's trace is known (True), or not traced (False)."""
        if self.write is None:
            return False
        return self.hold_parts(record, {None: request_id}, self.write)

    def hold_parts(
        self,
        record: dict[str, Any],
        parts: dict[str | None, str | None],
        then: Callable[[dict[str, Any]], None],
    ) -> bool:
        """Keep `record` until the traces of the traced requests among `parts` (the key of
        the part of the record a request's trace goes in: None the record itself, "a" its
        `record["a"]`; the request's id) are known, then `then(record)` (True); False: none
        of them is traced."""
        with self._lock:
            tracers = [t for _, t in self._tracers]
            early = {
                part: self._early.pop(rid)
                for part, rid in parts.items()
                if rid is not None and rid in self._early
            }
        for part, trace in early.items():
            (record if part is None else record.setdefault(part, {}))["trace"] = trace_record(trace)
        waiting = {
            rid: part
            for part, rid in parts.items()
            if rid is not None and part not in early and any(t.is_traced(rid) for t in tracers)
        }
        if not waiting:
            if early:
                then(record)
            return bool(early)
        held = _Held(record, waiting, then)
        with self._lock:
            for rid in waiting:
                self._held[rid] = held
        return True

    def _release(self, trace: RequestTrace, with_trace: bool) -> None:
        with self._lock:
            held = self._held.pop(trace.request_id, None)
            if held is None:
                # Its record is not written yet (a compared pair waits for its other side):
                # kept a while for it.
                if with_trace:
                    self._early[trace.request_id] = trace
                    while len(self._early) > MAX_EARLY:
                        self._early.popitem(last=False)
                return
            part = held.waiting.pop(trace.request_id)
            if with_trace:
                target = held.record if part is None else held.record.setdefault(part, {})
                target["trace"] = trace_record(trace)
            done = not held.waiting
        if done:
            held.then(held.record)

    def _take(self, traces: list[RequestTrace]) -> None:
        for trace in traces:
            if trace.inputs:
                if self._with_tensors >= MAX_TENSORS and self.selection.kind is not SelectionKind.SLOWEST:
                    trace.inputs = {}  # the first MAX_TENSORS only: a megabyte or more each
                else:
                    self._with_tensors += 1
            if self.selection.kind is SelectionKind.SLOWEST:
                for dropped in self._kept.offer(trace):
                    self._release(dropped, with_trace=False)
            else:
                if len(self._kept.kept()) < MAX_KEPT:
                    self._kept.offer(trace)
                self._release(trace, with_trace=True)

    def _poll(self, flush: bool = False) -> None:
        with self._lock:
            tracers = [t for _, t in self._tracers]
        for tracer in tracers:
            self._take(tracer.poll(flush=flush))

    def _pump(self) -> None:
        while not self._stop.wait(POLL_S):
            self._poll()

    def _settle(self, tracers: list[Tracer]) -> None:
        """Poll until the server's side of every traced request has come, or as long as a
        traced request waits for it (longer once the server is known to trace)."""
        start = time.monotonic()

        def patience_s() -> float:  # grows when a first server trace comes meanwhile
            return max([SETTLE_S, *(t.collector.patience_s for t in tracers)])

        while any(t.collector.waiting for t in tracers) and time.monotonic() - start < patience_s():
            for tracer in tracers:
                self._take(tracer.poll())
            time.sleep(POLL_S / 2)

    def finish_session(self, session: TritonSession) -> None:
        """Before `session` closes: its traced requests' traces (the others go on)."""
        with self._lock:
            tracers = [t for s, t in self._tracers if s is session]
        self._settle(tracers)
        for tracer in tracers:
            self._take(tracer.poll(flush=True))

    # -- the end -------------------------------------------------------------------
    def finish(self) -> list[RequestTrace]:
        """Every traced request's trace (the records held written), the files written;
        call before the sessions close (their tracers read the server's last traces)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:
            tracers = [t for _, t in self._tracers]
        self._settle(tracers)
        self._poll(flush=True)
        kept = self._kept.kept()
        if self.selection.kind is SelectionKind.SLOWEST:
            for trace in kept:
                self._release(trace, with_trace=True)
        with self._lock:
            left = {id(h): h for h in self._held.values()}
            self._held = {}
        for held in left.values():  # traced, but ended without a trace (the session closed first)
            held.then(held.record)
        self._write_files(kept)
        self._say(kept)
        return kept

    def _write_files(self, traces: list[RequestTrace]) -> None:
        if self.output is not None:
            try:
                write_chrome_trace(self.output, traces)
                eprint(
                    f"--trace-output: {len(traces)} traced request(s) in {self.output} (for ui.perfetto.dev)"
                )
            except OSError as e:
                raise UsageError(f"--trace-output: {describe_write_error(self.output, e)}") from None
        if self.tensors is not None:
            self._write_tensors(traces)

    def _write_tensors(self, traces: list[RequestTrace]) -> None:
        assert self.tensors is not None
        with_inputs = [t for t in traces if t.inputs]
        if not with_inputs:
            eprint("--trace-tensors: no traced request carried its tensors: nothing written")
            return
        session = next(
            (s for s, _ in self._tracers if s.info is not None and s.info.name == with_inputs[0].model), None
        )
        if session is None or session.info is None:
            return
        info = session.info
        types = {
            str(t.get("name")): str(t.get("datatype"))
            for t in info.inputs
            if str(t.get("name")) in with_inputs[0].inputs
        }
        same = [t for t in with_inputs if t.model == info.name]
        try:
            entries = write_input_data(
                self.tensors, [t.inputs for t in same], types, batched=info.max_batch_size > 0
            )
        except (InputDataError, OSError) as e:
            what = describe_write_error(self.tensors, e) if isinstance(e, OSError) else str(e)
            raise UsageError(f"--trace-tensors: {what}") from None
        endpoint = session.spec.endpoints[0]
        command = replay_command(
            model=info.name,
            url=endpoint.address,
            protocol=session.protocol.value,
            input_file=Path(self.tensors),
            batch=max(1, session.batching),
            concurrency=session.spec.limits.max_in_flight,
            version=session.spec.version,
        )
        eprint(f"--trace-tensors: {entries} tensor(s) of {len(same)} request(s) in {self.tensors}; replay:")
        eprint(f"  {command}")

    def _say(self, traces: list[RequestTrace]) -> None:
        if not traces:
            eprint("--trace: no request was traced")
            return
        slowest = sorted(traces, key=lambda t: -t.duration_ms)[:SLOWEST_SAID]
        eprint(f"--trace: {len(traces)} traced request(s); the slowest:")
        for trace in slowest:
            eprint(f"  request {trace.request_id} ({trace.model}): {trace.duration_ms:.1f} ms")
            eprint("    " + "; ".join(p.label for p in breakdown(trace)))
            for finding in diagnose(trace)[:FINDINGS_SAID]:
                eprint("    -> " + finding.text())
