"""The run loop: ``flow.run()`` driving the sources attached to a dataflow's inputs.

Each *tick* polls every live source once, pushes what it read into its input as whole Arrow
batches (``update_batch``), advances every open input of the dataflow to one shared frontier,
and runs the engine until the outputs are complete up to it; then the listeners (sinks,
subscriptions) see the newly completed updates. Times are ints (``time_dims == 1``):

* a source without ``time_column`` stamps each tick's rows with the processing time, the
  milliseconds since the Unix epoch (never less than the frontier, so strictly increasing
  from tick to tick), and lets the frontier pass it at the end of the tick (a tick that read
  nothing leaves the frontier where it is: nothing waits on it, and the engine stays idle);
* a *timed* source (``time_column=``) gives each row's time; it holds the frontier at the
  greatest time it has sent, and a row behind the frontier is late: an error update.

The loop ends when every source has ended (their inputs are closed, inputs fed by hand are
advanced past every time pushed, and the engine runs to completion), on ``flow.stop()``
(from another thread or a callback), or on Ctrl-C. Every end is clean: the inputs are
advanced past everything pushed, the engine completes those times, the listeners write them
(``final=True``), and only then does ``run()`` return or raise (a Ctrl-C raises
``KeyboardInterrupt`` after that, a failing source :class:`SourceError`). In a persistent
dataflow (:mod:`ddflow.persist`) sources that end only end the run: the inputs stay open,
since a later run resumes the sources (a directory may get new files). The loop also keeps a
persistent dataflow's checkpoint directory: it restores the inputs (:meth:`RunLoop.restore`),
logs each tick, logs what is fed by hand, and checkpoints.
While the loop runs, Ctrl-C only asks it to stop; a second Ctrl-C interrupts at once.

The loop holds :attr:`RunLoop.lock` while it works and releases it while it waits for data,
so another thread (``dd.serve_metrics``) can read the engine between ticks; a
:attr:`RunLoop.reporter` (``flow.run(progress=...)``) is called after every tick.

A row the input refuses (a value no column of its type can hold) becomes an error update: the
batch is split in halves until the refused rows stand alone (the input accepts a batch
all or nothing), so the rest of the batch goes in.
"""

from __future__ import annotations

import builtins
import itertools
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow.builder import PlanBuilder
from ddflow.errorlog import ErrorLog, RawError
from ddflow.errors import InvalidValueError, PlanError, ReentrancyError
from ddflow.gate import EngineGate
from ddflow.input import InputSession
from ddflow.memory import trim_memory
from ddflow.persist.hand import HandBatch, arrow_columns, replay_hand
from ddflow.persist.journal import Journal
from ddflow.persist.records import Snapshot, Tick
from ddflow.sources import (
    RowError,
    Source,
    SourceBatch,
    SourceError,
    row_values,
    split_late,
)
from ddflow.times import Time

__all__ = ["Driver", "Listener", "RunLoop", "processing_time"]

Listener = Callable[[bool], None]
"""Called after the dataflow delivers completed updates; ``True`` once when a run ends."""


def processing_time() -> int:
    """Milliseconds since the Unix epoch: the default logical time of a source's rows."""
    return time.time_ns() // 1_000_000


class Driver(Protocol):
    """What the run loop needs from the dataflow it drives."""

    builder: PlanBuilder

    @property
    def gate(self) -> EngineGate:
        """The lock every call into the engine holds."""
        ...

    def run_until(self, time: Time) -> None:
        """Runs the engine until outputs are complete before ``time``; delivers them."""

    def poll_errors(self) -> ErrorLog:
        """The dataflow's error log."""
        ...


@dataclass
class _Attached:
    """A source and the input it feeds."""

    session: InputSession
    source: Source
    ended: bool = False
    last_time: int | None = None
    """The greatest time a timed source has sent."""
    closed: bool = False
    """Whether ``source.close()`` was called (it is called once)."""


def _close_source(a: _Attached) -> list[BaseException]:
    """Closes ``a``'s source unless it was closed; its failure, if any."""
    if a.closed:
        return []
    a.closed = True
    try:
        a.source.close()
    except BaseException as exc:
        return [exc]
    return []


class RunLoop:
    """The sources and listeners of one dataflow, and the loop that drives them."""

    poll_interval = 0.05
    """Seconds to wait after a tick that read nothing."""

    def __init__(self, clock: Callable[[], int] = processing_time) -> None:
        self.attached: list[_Attached] = []
        self.listeners: list[Listener] = []
        self.clock = clock
        """The processing-time clock (tests substitute one)."""
        self._stop = threading.Event()
        self._interrupted = False
        self._pushed: int | None = None
        """The greatest time pushed by this loop."""
        self.lock = threading.Lock()
        """Held while a run works (ticks, the clean stop), free while it waits for data:
        another thread takes it to read the engine between ticks."""
        self.reporter: Callable[[bool], None] | None = None
        """Called after every tick (``False``) and when a run ends (``True``)."""
        self.rows_read = 0
        """Rows (and bad rows) the sources handed over, over all runs."""
        self.frontier: int | None = None
        """The shared frontier of the source inputs after the last tick."""
        self.journal: Journal | None = None
        """The checkpoint directory of a persistent dataflow (opened by its first run)."""
        self.resumed_since = 0
        """After a restart, the frontier of the checkpoint it resumed from: outputs before
        it were delivered before the restart (sinks skip them)."""
        self.closed = False
        """Set by :meth:`close`: the sources are closed and no run may start."""
        self._running: int | None = None
        """The thread running :meth:`run`, while it runs."""
        self._idle = threading.Event()
        """Set while no :meth:`run` is past its start (:meth:`close` waits for it)."""
        self._idle.set()
        self._replayed = False

    @property
    def sources(self) -> list[Source]:
        """The attached sources, in the order they were attached."""
        return [a.source for a in self.attached]

    def attach(self, session: InputSession, source: Source) -> None:
        """Feeds ``session`` from ``source`` while the dataflow runs."""
        if any(a.session is session for a in self.attached):
            raise PlanError(f"input {session.name!r} already has a source")
        self.attached.append(_Attached(session, source))

    def listen(self, listener: Listener) -> None:
        """Calls ``listener(final)`` after each delivery of completed updates."""
        self.listeners.append(listener)

    def notify(self, final: bool) -> None:
        """Calls every listener."""
        for listener in self.listeners:
            listener(final)

    def stop(self) -> None:
        """Asks the running loop to stop after its current tick (thread-safe)."""
        self._stop.set()

    def close(self) -> None:
        """Closes every source not yet closed (a stopped run leaves them open, to go on
        later), each once; later runs are refused. From another thread while a run runs, it
        stops that run and waits for its clean stop first; from the run's own thread (a
        callback) it is refused: call ``stop()`` there. Raises the first source's failure to
        close, after trying every source."""
        if self._running == threading.get_ident():
            raise ReentrancyError(
                "close() was called during run(), from its own thread (a callback): call "
                "stop() there and close() once run() has returned"
            )
        self.closed = True  # a run not yet past its start refuses to start
        self.stop()
        self._idle.wait()  # a run past its start stops after its tick
        with self.lock:
            failures: list[BaseException] = []
            for a in self.attached:
                failures += _close_source(a)
            if failures:
                for later in failures[1:]:
                    failures[0].add_note(f"ddflow: closing another source failed too: {later!r}")
                raise failures[0]

    # -- running ------------------------------------------------------------------------------

    def run(self, flow: Driver, inputs: Sequence[InputSession], finish: Callable[[], None]) -> None:
        """Drives the sources until they all end, ``stop()`` or Ctrl-C; ``finish`` runs the
        dataflow to completion once the source inputs are closed."""
        self._idle.clear()
        try:
            self._run(flow, inputs, finish)
        finally:
            self._idle.set()

    def _run(
        self, flow: Driver, inputs: Sequence[InputSession], finish: Callable[[], None]
    ) -> None:
        failures: list[BaseException] = []
        ended = False
        with self.lock, self._ctrl_c_stops():
            if self.closed:  # checked after marking the loop busy: close() waits or we refuse
                raise PlanError(
                    "this dataflow was closed (close() closed its sources): build a new one to run"
                )
            self._running = threading.get_ident()
            try:
                ended = self._drive(flow, inputs)
            except BaseException as exc:  # a failing source, an engine error, Ctrl-C twice
                failures.append(exc)
            # A persistent dataflow's sources ending ends this run, not the collections: a
            # later run resumes them (new files in a directory), so the inputs stay open.
            complete = ended and self.journal is None
            steps: list[Callable[[], None]] = [
                lambda: self._finish(flow, inputs, complete, finish),
                lambda: self.notify(True),
                lambda: self._report(True),
            ]
            if self.journal is not None and self._replayed:
                steps.append(lambda: self.checkpoint(self._frontier(inputs)))
            for step in steps:
                try:
                    step()
                except BaseException as exc:
                    failures.append(exc)
            if ended or failures:
                for a in self.attached:
                    failures += _close_source(a)
            self._running = None
        failure = failures[0] if failures else None
        for later in failures[1:]:
            assert failure is not None
            failure.add_note(f"ddflow: stopping cleanly then failed too: {later!r}")
        self._stop.clear()
        interrupted, self._interrupted = self._interrupted, False
        if failure is not None:
            raise failure
        if interrupted:
            raise KeyboardInterrupt

    def _finish(
        self,
        flow: Driver,
        inputs: Sequence[InputSession],
        ended: bool,
        finish: Callable[[], None],
    ) -> None:
        """Completes every time pushed; when every source has ended, closes their inputs
        and runs the dataflow to completion."""
        if ended:
            for a in self.attached:
                a.session.close()
        self._complete(flow, inputs)
        if ended:
            finish()

    def _drive(self, flow: Driver, inputs: Sequence[InputSession]) -> bool:
        """Ticks until every source has ended (True) or a stop is asked (False)."""
        frontier = max([_time(s) for s in inputs if not s.closed] or [0])
        while not self._stop.is_set():
            live = [a for a in self.attached if not a.ended]
            if not live:
                return True
            now = max(self.clock(), frontier)
            read: list[tuple[int, SourceBatch]] = []
            rows = 0
            # The gate is held from the polls to the advance: nothing is fed by hand between
            # logging the tick and advancing every open input to its target.
            with flow.gate:
                try:
                    rows = sum(self._poll(flow, a, now, frontier, read) for a in live)
                    target = self._target(now, frontier)
                finally:
                    # Logged once in the inputs and before the engine runs on them (a failing
                    # source included: what the others read goes on).
                    if self.journal is not None and read:
                        t = self._target(now, frontier)
                        logged = t if t is not None and rows > 0 else frontier
                        tick = Tick(0, now, frontier, logged, read)
                        tick.offsets = [a.source.offset() for a in self.attached]
                        self.journal.append(tick)
                        for a, offset in zip(self.attached, tick.offsets, strict=True):
                            a.source.acknowledge(offset)
                advance = bool(rows) and target is not None and target > frontier
                if advance:
                    assert target is not None
                    for session in inputs:
                        if not session.closed:
                            session.advance_to(target)
            if advance:
                assert target is not None
                frontier = target
                flow.run_until(target)
                trim_memory()  # what the delivery freed, before the next tick reuses it
            self.rows_read += rows
            self.frontier = frontier
            self._report(False)
            if rows == 0:
                self.lock.release()  # another thread may read the engine while we wait
                try:
                    self._stop.wait(self.poll_interval)
                finally:
                    self.lock.acquire()
        return False

    # -- persistence --------------------------------------------------------------------------

    def after_run(self, time: int, inputs: Sequence[InputSession]) -> None:
        """Checkpoints when one is due, after ``run_until(time)`` delivered every output
        before ``time`` and before the open inputs' frontiers."""
        if self.journal is not None and self._replayed and self.journal.due():
            self.checkpoint(min([time, *(_time(s) for s in inputs if not s.closed)]))

    def checkpoint(self, frontier: int) -> None:
        """Compacts the log into a checkpoint at ``frontier`` (every time before it is
        complete and delivered to the listeners)."""
        assert self.journal is not None
        self.journal.checkpoint(frontier, [a.source.offset() for a in self.attached])

    def _frontier(self, inputs: Sequence[InputSession]) -> int:
        """The inputs' shared frontier (the greatest time once all are closed)."""
        open_inputs = [_time(s) for s in inputs if not s.closed]
        if open_inputs:
            return min(open_inputs)
        return 2**63 - 1 if self._pushed is None else self._pushed + 1

    def restore(
        self, flow: Driver, inputs: Sequence[InputSession], hand: Sequence[InputSession]
    ) -> None:
        """Rebuilds the inputs from the checkpoint directory (snapshots, then the ticks
        logged after them), resumes every source after what it had read, gives the inputs
        fed by hand (``hand``) what was fed before their frontiers and advances them there,
        and runs the engine up to the frontier reached before (sinks skip what they
        delivered). From then on what is fed by hand is logged."""
        assert self.journal is not None
        journal = self.journal
        for a in self.attached:
            a.session.source_name = a.source.name
        restored = journal.restore()
        self._replayed = True
        self.resumed_since = restored.since
        sources = len(self.attached)
        replay_hand(hand, sources, restored)
        for snapshot in restored.snapshots:
            if snapshot.source >= sources:
                continue
            a = self.attached[snapshot.source]
            errors = list(snapshot.errors)
            if snapshot.table.num_rows:
                errors += _push_snapshot(a.session, snapshot)
                self._pushed = max(int(snapshot.times.max()), self._pushed or 0)
            if errors:
                label = flow.builder.label(a.session.node)
                flow.poll_errors().add(
                    _raw(a.session.node, label, a.source.name, e, 0) for e in errors
                )
        # The inputs hold the rows now: free the Arrow tables before the engine runs on them.
        restored.snapshots.clear()
        for tick in restored.ticks:
            for k, batch in tick.batches:
                self._push(flow, self.attached[k], batch, tick.now, tick.frontier)
        if restored.offsets is not None:
            for a, offset in zip(self.attached, restored.offsets, strict=True):
                a.source.resume(offset)
        for session, frontier in zip(hand, restored.frontiers, strict=True):
            if frontier is None:
                session.close()
            elif frontier > _time(session):
                session.advance_to(frontier)
        for session in inputs:
            if not session.closed and _time(session) < restored.target:
                session.advance_to(restored.target)
        for index, session in enumerate(hand):
            _log_by_hand(journal, index, session)
        frontiers = [_time(s) for s in inputs if not s.closed]
        if frontiers and min(frontiers) > 0:
            flow.run_until(min(frontiers))

    def _report(self, final: bool) -> None:
        if self.reporter is not None:
            self.reporter(final)

    def _target(self, now: int, frontier: int) -> int | None:
        """The shared frontier after a tick at ``now`` (None when every source has ended)."""
        bounds = []
        for a in self.attached:
            if a.ended:
                continue
            if a.source.timed:
                bounds.append(frontier if a.last_time is None else a.last_time)
            else:
                bounds.append(now + 1)
        return max(frontier, min(bounds)) if bounds else None

    def _complete(self, flow: Driver, inputs: Sequence[InputSession]) -> None:
        """Advances the open inputs past every time pushed and completes those times."""
        open_inputs = [s for s in inputs if not s.closed]
        if not open_inputs:
            return
        frontier = max(_time(s) for s in open_inputs)
        target = frontier if self._pushed is None else max(frontier, self._pushed + 1)
        for session in open_inputs:
            if _time(session) < target:
                session.advance_to(target)
        flow.run_until(target)

    def _poll(
        self,
        flow: Driver,
        a: _Attached,
        now: int,
        frontier: int,
        read: list[tuple[int, SourceBatch]],
    ) -> int:
        """Polls one source and pushes what it read (also appended to ``read``, with the
        source's index); returns the number of rows read."""
        try:
            batches = a.source.poll()
            ended = a.source.ended
        except Exception as exc:
            raise SourceError(
                f"{a.source.name} (feeding input {a.session.name!r}) failed: {exc}"
            ) from exc
        rows = 0
        index = self.attached.index(a)
        for batch in batches:
            rows += batch.table.num_rows + len(batch.errors)
            read.append((index, batch))
            self._push(flow, a, batch, now, frontier)
        a.ended = ended
        return rows

    def _push(
        self, flow: Driver, a: _Attached, batch: SourceBatch, now: int, frontier: int
    ) -> None:
        """Pushes one batch; its bad, late and refused rows become error updates."""
        errors = list(batch.errors)
        table, rows = batch.table, batch.rows
        if rows is None:
            rows = np.arange(1, table.num_rows + 1, dtype=np.int64)
        times: int | npt.NDArray[np.int64] = now
        if batch.times is not None:
            table, rows, times, late = split_late(batch, frontier)
            errors += late
            if len(times):
                greatest = int(times.max())
                a.last_time = max(greatest, a.last_time or 0)
                self._pushed = max(greatest, self._pushed or 0)
        elif table.num_rows:
            self._pushed = max(now, self._pushed or 0)
        errors += _push_rows(a.session, batch.origin, table, rows, times)
        if errors:
            default = frontier if a.source.timed else now
            label = flow.builder.label(a.session.node)
            flow.poll_errors().add(
                _raw(a.session.node, label, a.source.name, e, default) for e in errors
            )

    @contextmanager
    def _ctrl_c_stops(self) -> Iterator[None]:
        """While the loop runs, Ctrl-C asks it to stop (a second one interrupts at once)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT)

        def on_ctrl_c(signum: int, frame: Any) -> None:
            self._interrupted = True
            self._stop.set()
            signal.signal(signal.SIGINT, _handler(previous))

        signal.signal(signal.SIGINT, on_ctrl_c)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, _handler(previous))


def _log_by_hand(journal: Journal, index: int, session: InputSession) -> None:
    """Logs what is fed to ``session`` (the ``index``-th input fed by hand) in ``journal``:
    every batch the engine accepts, and every advance."""
    names = list(session.columns)

    def record(
        columns: list[Any], times: npt.NDArray[np.int64], diffs: npt.NDArray[np.int64]
    ) -> None:
        table, dtypes = arrow_columns(names, columns)
        flat = np.array(times[:, 0] if times.ndim == 2 else times, dtype=np.int64)
        journal.record_hand(HandBatch(index, table, dtypes, flat, np.array(diffs, np.int64)))

    def advance(frontier: int | None) -> None:
        journal.advance_hand(index, frontier)

    session.recorder = record
    session.on_advance = advance


def _handler(previous: Any) -> Any:
    """The SIGINT handler to restore (Python's own where the previous one was not set from
    Python)."""
    return signal.default_int_handler if previous is None else previous


def _time(session: InputSession) -> int:
    """An open input's frontier as an int (sources need int times)."""
    t = session.time
    assert isinstance(t, int), f"input {session.name!r}: sources need int times, not {t!r}"
    return t


def _push_rows(
    session: InputSession,
    origin: str,
    table: pa.Table,
    rows: npt.NDArray[np.int64],
    times: int | npt.NDArray[np.int64],
    diffs: npt.NDArray[np.int64] | None = None,
) -> list[RowError]:
    """Pushes ``table`` (each row once, or with ``diffs``); where the input refuses a value,
    halves the batch until the refused rows stand alone and returns them as errors
    (everything else goes in)."""
    if table.num_rows == 0:
        return []
    try:
        session.push_from_source(table, times, diffs)
        return []
    except (InvalidValueError, builtins.OverflowError) as exc:
        if table.num_rows == 1:
            column = _not_utf8(table)
            message = str(exc) if column is None else "text that is not valid UTF-8"
            return [RowError(origin, int(rows[0]), column, message, row_values(table))]
    half = table.num_rows // 2
    parts = []
    for lo, hi in ((0, half), (half, table.num_rows)):
        part_times = times if isinstance(times, int) else times[lo:hi]
        part_diffs = None if diffs is None else diffs[lo:hi]
        parts += _push_rows(
            session, origin, table.slice(lo, hi - lo), rows[lo:hi], part_times, part_diffs
        )
    return parts


def _push_snapshot(session: InputSession, snapshot: Snapshot) -> list[RowError]:
    """Pushes a snapshot's rows with their times and counts; returns the refused rows.

    All rows go in one batch, with one time and implicit counts where they are all equal (a
    restart's layers mostly are: the input then holds no per-row times). Only when the
    input refuses a row are they pushed again one origin at a time, so that each refused
    row is named by its origin (nothing went in from the refused batch)."""
    times: int | npt.NDArray[np.int64] = snapshot.times
    if len(snapshot.times) and (snapshot.times == snapshot.times[0]).all():
        times = int(snapshot.times[0])
    diffs = None if (snapshot.diffs == 1).all() else snapshot.diffs
    try:
        session.push_from_source(snapshot.table, times, diffs)
        return []
    except (InvalidValueError, builtins.OverflowError):
        pass
    order = np.argsort(snapshot.origin, kind="stable")
    codes = snapshot.origin[order]
    table = snapshot.table.take(pa.array(order))
    rows, times, diffs = snapshot.rows[order], snapshot.times[order], snapshot.diffs[order]
    bounds = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), len(codes)]
    errors: list[RowError] = []
    for lo, hi in itertools.pairwise(bounds):
        errors += _push_rows(
            session,
            snapshot.origins[int(codes[lo])],
            table.slice(lo, hi - lo),
            rows[lo:hi],
            times[lo:hi],
            diffs[lo:hi],
        )
    return errors


def _not_utf8(table: pa.Table) -> str | None:
    """The first string column of a one-row table holding bytes that are not UTF-8."""
    for name in table.column_names:
        column = table[name]
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            raw = column.cast(pa.binary())[0].as_py()
            try:
                if raw is not None:
                    raw.decode("utf-8")
            except UnicodeDecodeError:
                return str(name)
    return None


def _raw(node: int, label: str, source: str, e: RowError, default: int) -> RawError:
    """An error update for a row: at its own time when valid, else the tick's."""
    where = f"{source}: {e.origin}, row {e.row}"
    if e.column is not None:
        where += f", column {e.column!r}"
    t = e.time if e.time is not None and e.time >= default else default
    return (node, label, f"{where}: {e.message}", e.values, [t], e.count)
