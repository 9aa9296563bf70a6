"""``Dataflow``: builds a plan from Python and drives the Rust engine that runs it.

Operators on collections append nodes to the dataflow's plan. The engine is created lazily
by the first call that needs it (pushing data, advancing an input, stepping, running); from
the first update or run on, the plan is frozen and adding operators raises ``PlanError``.
The outer time shape (``time_dims``) is fixed by the first time seen, or declared.

The dataflow is the owner at the top of the package's layers: the handles it gives out see
it through two narrow interfaces it implements, :class:`~ddflow.records.PlanOwner`
(collections and arrangements: the plan builder, new captures, probes and trace handles) and
:class:`~ddflow.engine.Runtime` (inputs, captures, probes, trace handles: the engine, the
time shape, errors).
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, cast

import pyarrow as pa

from ddflow import event_time
from ddflow.builder import ArrangedNode, PlanBuilder
from ddflow.capture import Capture, Probe
from ddflow.collection import Arrangement, Collection
from ddflow.constants import constant_op
from ddflow.dtypes import INT64_MAX
from ddflow.engine import (
    AttachedEngine,
    Engine,
    EngineFactory,
    EngineSideHandle,
    SharedState,
    native_engine,
    remap_functions,
)
from ddflow.errorlog import ErrorLog
from ddflow.errors import DdflowError, PlanError
from ddflow.gate import EngineGate, GatedEngine, ungated
from ddflow.input import InputSession
from ddflow.memory import MemoryLimit, default_memory_limit, resolve_memory_limit
from ddflow.metrics import Metrics, collect
from ddflow.persist.journal import Persistence
from ddflow.persist.open import hand_fed, open_journal
from ddflow.plan import ImportTraceOp, InputOp, PlanText, user_location
from ddflow.plan_dtypes import PlanDtypes
from ddflow.plan_graph import GRAPH_FORMATS, plan_graph
from ddflow.progress import RunProgress, reporter
from ddflow.read_columns import unread_columns
from ddflow.runloop import Listener, RunLoop
from ddflow.sources import Source
from ddflow.times import Coords, Time, TimeShape, is_int
from ddflow.traces import TraceHandle

__all__ = ["Dataflow", "MAX_WORKERS"]

MAX_WORKERS = 256
"""The largest ``workers`` a dataflow accepts (each worker is a thread-sized shard)."""


class Dataflow:
    """A differential dataflow: inputs, operators, outputs, and the engine that runs them.

    ``workers`` is the number of key shards the engine processes in parallel threads;
    ``time_dims`` declares the number of outer time coordinates (default: fixed by the first
    time seen; ``1`` means int times). ``log`` keeps the per-invocation operator log that
    ``log()`` returns (on by default, for debugging; it costs memory and ~15% of throughput on
    small batches, so long-running jobs turn it off).

    ``memory_limit`` bounds the bytes ddflow's Rust side holds: bytes as an int, or a size
    such as ``"4GB"`` or ``"512MiB"`` (kB, MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB:
    powers of 1024). The default ``"auto"`` is ``DDFLOW_MEMORY_LIMIT`` if set, else 80% of
    the smaller of the machine's physical memory and its cgroup limit; ``None`` turns the
    check off. Past the limit the run stops with ``MemoryLimitError`` naming the operator, the
    live bytes and the largest arrangements, instead of the process aborting when memory runs
    out; the dataflow cannot continue after it. The count covers every engine and kernel in
    the process (one counter; each dataflow compares it with its own limit); Python objects
    and numpy arrays Python allocated are not counted. A dataflow attached to another's
    engine (``import_trace``) runs under that engine's limit.
    """

    engine_factory: ClassVar[EngineFactory] = staticmethod(native_engine)
    """Builds the engine (tests substitute a fake)."""

    def __init__(
        self,
        workers: int = 1,
        time_dims: int | None = None,
        log: bool = True,
        persistence: Persistence | None = None,
        memory_limit: MemoryLimit = "auto",
    ) -> None:
        """An empty dataflow."""
        self.memory_limit = resolve_memory_limit(memory_limit)
        """The memory limit in bytes (None: no limit)."""
        if persistence is not None and not isinstance(persistence, Persistence):
            raise PlanError(f"persistence must be a dd.Persistence, got {persistence!r}")
        self.persistence = persistence
        """Where the dataflow checkpoints and restarts from (``dd.Persistence``), or None."""
        if not is_int(workers) or not 1 <= workers <= MAX_WORKERS:
            raise PlanError(f"workers must be an int from 1 to {MAX_WORKERS}, got {workers!r}")
        self.workers = int(workers)
        self.builder = PlanBuilder(TimeShape(time_dims))
        """The plan under construction, with its user functions and time shape."""
        self._inputs: list[InputSession] = []
        self._captures: list[Capture] = []
        self._engine_obj: Engine | None = None
        self._log = bool(log)
        self._error_log = ErrorLog()
        self._gate = EngineGate()
        """The lock calls into this dataflow's engine hold (its root's when attached)."""
        self._trace_handles: list[weakref.ref[EngineSideHandle]] = []
        """Handles on this dataflow's arrangements (registered when the engine starts)."""
        self._released_handles: list[int] = []
        """Engine handle ids of dropped handles, released at the next engine call."""
        self._imports: list[tuple[int, TraceHandle]] = []
        """``import_trace`` nodes and the handles they import."""
        self._host: Dataflow | None = None
        """The dataflow whose engine this one attaches to (set by ``import_trace``)."""
        self._loop = RunLoop()
        """The sources that ``run()`` drives and the listeners (sinks) told of progress."""
        self._unread: list[frozenset[int]] = []
        """Per node, the columns no operator reads (``read_columns``; set at start)."""
        self._restoring = False
        self._restore_failure: BaseException | None = None

    def __repr__(self) -> str:
        state = "running" if self._engine_obj is not None else "building"
        return (
            f"Dataflow(workers={self.workers}, time_dims={self.time_dims}, "
            f"{len(self.builder.plan.nodes)} nodes, {state})"
        )

    @property
    def time_dims(self) -> int | None:
        """The number of outer time coordinates (None until fixed)."""
        return self.time_shape.dims

    @property
    def time_shape(self) -> TimeShape:
        """The shape of the outer times (``Runtime``)."""
        return self.builder.times

    # -- building -----------------------------------------------------------------------------

    def new_input(
        self, columns: Sequence[str] | Mapping[str, Any] | str, name: str | None = None
    ) -> tuple[InputSession, Collection]:
        """A new input: its session (to feed updates) and its collection.

        ``columns`` are names (dtypes fixed by the first update) or ``{name: dtype}`` with
        dtypes ``"int64"``, ``"float64"``, ``"bool"``, ``"str"`` (or ``int``, ``float``, ...).
        """
        label_loc = user_location()
        names, dtypes = InputSession.parse_columns(columns)
        name = name or f"input{len(self._inputs)}"
        label = f"input {name!r}@{label_loc}"
        node = self.builder.plan.add(InputOp(name), 0, [], names, label)
        session = InputSession(self, node, name, names, dtypes)
        if self.persistence is not None:
            session.on_first_use = self._open_persistence
        self._inputs.append(session)
        return session, Collection(self, node, names, 0)

    def constant(
        self,
        rows: Iterable[Sequence[Any]] | Mapping[str, Sequence[Any]],
        schema: Sequence[str] | Mapping[str, Any] | str,
    ) -> Collection:
        """A constant collection: each of ``rows`` with diff +1 at the least time (``0``, or
        ``(0, 0)`` for tuple times), and no change after; it never holds progress back.

        ``rows`` are tuples (one value per column) or a mapping from each column to its
        values; ``schema`` is as ``new_input`` takes it: names, or ``{name: dtype}`` (an
        undeclared column takes the dtype of its first non-null value). Values are what
        ``dd.lit`` takes (ints, floats, bools, strings, bytes, ``None``, dates, ...). A row
        that does not fit raises ``PlanError`` naming the row and the column.
        """
        label = f"constant@{user_location()}"
        names, dtypes = InputSession.parse_columns(schema)
        spec = constant_op(rows, names, dtypes, label)
        node = self.builder.plan.add(spec, 0, [], names, label)
        return Collection(self, node, names, 0)

    def new_capture(
        self, node: int, columns: tuple[str, ...], label: str, errors: str, keep: str
    ) -> Capture:
        """A capture reading ``capture`` node ``node`` (``PlanOwner``; see
        ``Collection.capture``)."""
        cap = Capture(self, node, columns, label, errors=errors, keep=keep)
        self._captures.append(cap)
        return cap

    def new_probe(self, node: int, label: str) -> Probe:
        """A probe on ``probe`` node ``node`` (``PlanOwner``; see ``Collection.probe``)."""
        return Probe(self, node, label)

    def new_trace_handle(
        self, node: int, key: tuple[str, ...], columns: tuple[str, ...]
    ) -> TraceHandle:
        """A trace handle on the top-level arrangement at ``node`` (``PlanOwner``; see
        ``Arrangement.trace``)."""
        unread = self._unread[node] if node < len(self._unread) else frozenset()
        if unread:
            names = [columns[c] for c in sorted(unread) if c < len(columns)]
            raise PlanError(
                f"{self.builder.label(node)}: trace() after the dataflow started: nothing in "
                f"it reads columns {names}, so its inputs did not keep them. Call trace() "
                "before the first update or run"
            )
        return TraceHandle(self, node, key, columns, self.builder.label(node))

    def import_trace(self, trace: TraceHandle) -> Arrangement:
        """Another dataflow's arrangement, through a trace handle, as an arrangement here.

        This dataflow then runs in the engine of ``trace``'s dataflow: when it starts, its
        nodes are attached to that engine, joins and reduces on the import read the shared
        trace without a copy (first its current contents, then each new batch), and
        ``step``/``run_until``/``run`` on either dataflow drive both. Both need the same
        ``workers`` and time shape; only arrangements of one engine can be imported.
        """
        label = f"import_trace@{user_location()}"
        if not isinstance(trace, TraceHandle):
            raise PlanError(f"{label}: expected a TraceHandle (arrangement.trace()), got {trace!r}")
        trace.check_open(label)
        host = _owner(trace)
        if host is self:
            raise PlanError(f"{label}: the trace is this dataflow's own; use the arrangement")
        root = host._root()
        if self._host is not None and self._host._root() is not root:
            raise PlanError(f"{label}: a dataflow can import traces of one engine only")
        if root is self or self._engine_obj is not None:
            raise PlanError(f"{label}: this dataflow has already started")
        if host.workers != self.workers:
            raise PlanError(
                f"{label}: the trace's dataflow has workers={host.workers}, this one "
                f"workers={self.workers}; they must run in one engine"
            )
        node = self.builder.plan.add(
            ImportTraceOp(source=0),
            0,
            [],
            trace.columns,
            label,
            [f"from {trace.label}", f"key=({', '.join(trace.key)})"],
        )
        self._host = host
        self._imports.append((node, trace))
        return Arrangement(self, ArrangedNode(node, trace.key, trace.columns, 0, None))

    def _root(self) -> Dataflow:
        """The dataflow that created the engine this one runs in (itself if not attached)."""
        flow = self
        while flow._host is not None:
            flow = flow._host
        return flow

    def plan(self) -> dict[str, Any]:
        """The plan as a JSON-able dict (the engine's input; see PLAN.md)."""
        return self.builder.plan.to_json(self.time_shape.dims or 1)

    def explain(self, format: str = "text") -> PlanText:
        """The plan as readable text: one line per node (op, inputs, columns, arguments,
        label with the user's file:line), indented by iterate scope. ``format="dot"`` or
        ``"mermaid"`` draws it instead: Graphviz DOT or a Mermaid flowchart, one box per
        node, each ``iterate`` body boxed, loops as dashed arrows (``plan_graph``)."""
        if format == "text":
            return self.builder.plan.explain(self.time_shape.dims)
        if format not in GRAPH_FORMATS:
            raise PlanError(f"explain: format must be 'text', 'dot' or 'mermaid', got {format!r}")
        return plan_graph(self.builder.plan, "dot" if format == "dot" else "mermaid")

    # -- engine (the ``Runtime`` its inputs, captures and trace handles use) -----------------

    def freeze(self) -> None:
        """Freezes the plan: the dataflow has received data or been run."""
        self.builder.plan.frozen = True

    @property
    def gate(self) -> EngineGate:
        """The lock that calls into the engine hold (one per engine: the root dataflow's),
        so that threads take turns (:mod:`ddflow.gate`)."""
        return self._root()._gate

    def _check_idle(self) -> None:
        """Raises ``ReentrancyError`` when called from a callback of a running engine call."""
        self.gate.check_idle()

    @contextmanager
    def _run_guard(self, what: str) -> Iterator[None]:
        """Marks the dataflow as running ``what`` (callbacks may be entered meanwhile); the
        caller holds the gate."""
        gate = self.gate
        gate.check_idle()
        gate.running = what
        try:
            yield
        finally:
            gate.running = None

    def started_engine(self) -> Engine | None:
        """The engine if it exists."""
        self._check_idle()
        return self._engine_obj

    def engine(self) -> Engine:
        """The engine, created (and the plan frozen) on first use."""
        with self.gate:
            return self._started()

    def _started(self) -> Engine:
        """``engine()`` with the gate held."""
        self._check_idle()
        if self._engine_obj is None:
            self.freeze()
            self.builder.plan.validate()
            dims = self.time_shape.dims or len(self.time_shape.zero())
            if self._host is not None:
                self._engine_obj = self._attach()
            else:
                plan_json = self.builder.plan.dumps(dims)
                native = type(self).engine_factory(plan_json, self.workers, self.builder.functions)
                if self.memory_limit != default_memory_limit():
                    native.set_memory_limit(self.memory_limit)
                if self.persistence is not None and self.persistence.local:
                    # On an object store, spill stays on local disk (the engine's default).
                    native.set_spill_dir(os.path.join(self.persistence.path, "spill"))
                self._engine_obj = cast(Engine, GatedEngine(native, self._gate))
                if not self._log:
                    self._engine_obj.set_logging(False)
                pinned = [
                    h.node for ref in self._trace_handles if isinstance(h := ref(), TraceHandle)
                ]
                self._unread = unread_columns(plan_json, pinned)
                for session in self._inputs:
                    session.declare(self._engine_obj)
                    session.skip_unread(self._unread[session.node])
            for ref in self._trace_handles:
                handle = ref()
                if handle is not None:
                    handle.register(self._engine_obj)
        if self._released_handles:
            for hid in self._released_handles:
                self._engine_obj.close_handle(hid)
            self._released_handles.clear()
        return self._engine_obj

    _engine = engine
    """The name benchmarks call ``engine`` by."""

    def track_handle(self, handle: EngineSideHandle) -> None:
        """Registers ``handle`` with the engine now, or when the engine starts."""
        self._trace_handles.append(weakref.ref(handle))
        if self._engine_obj is not None:
            handle.register(self._engine_obj)

    def release_later(self, ids: list[int]) -> None:
        """Queues engine handle ids for release at the next engine call (called by the
        finalizer of a dropped trace handle, which may run while the engine is busy)."""
        self._released_handles.extend(ids)

    def _attach(self) -> Engine:
        """Attaches this dataflow's plan to its host's engine (``import_trace``)."""
        assert self._host is not None
        root = self._root()
        root_engine = root.engine()
        if not isinstance(root_engine, AttachedEngine):
            # From now on the dataflows sharing the engine all see it through wrappers.
            root_engine = AttachedEngine(
                root_engine, 0, len(root.builder.plan.nodes), SharedState()
            )
            root._engine_obj = root_engine
        raw = root_engine.engine
        self._host.engine()
        times = self.time_shape
        dims = root.time_shape.dims or len(root.time_shape.zero())
        if times.dims is None:
            times.fix(dims)
        elif times.dims != dims:
            raise PlanError(
                f"import_trace: this dataflow's times have {times.dims} coordinates, the "
                f"engine it attaches to {dims}"
            )
        plan = self.builder.plan.to_json(dims)
        for node, trace in self._imports:
            trace.check_open(f"import_trace (node {node})")
            source_engine = _owner(trace).engine()
            offset = source_engine.offset if isinstance(source_engine, AttachedEngine) else 0
            plan["nodes"][node]["source"] = offset + trace.node
        functions = self.builder.functions
        ids = [root.builder.functions.register(functions[i]) for i in range(len(functions))]
        plan = remap_functions(plan, ids.__getitem__)
        offset = raw.attach(json.dumps(plan, separators=(",", ":")))
        return AttachedEngine(raw, offset, len(self.builder.plan.nodes), root_engine.shared)

    def _flush(self) -> Engine:
        """Hands every input's buffered updates to the engine."""
        engine = self.engine()
        for session in self._inputs:
            session.flush()
        return engine

    def _open_persistence(self) -> None:
        """In a persistent dataflow, opens its checkpoint directory and restores the inputs
        (sources resume, inputs fed by hand get back what was fed before their frontier),
        once: before an input is first fed, advanced or asked its frontier, or the dataflow
        first runs. A failed restore leaves the dataflow unusable (its error again)."""
        if self._restore_failure is not None:
            raise self._restore_failure
        if self.persistence is None or self._loop.journal is not None or self._restoring:
            return
        self._restoring = True
        try:
            if self.time_shape.dims is None:
                self.time_shape.fix(1)  # a persistent dataflow's times are ints
            self.freeze()  # the directory is the plan's: no operator may be added after
            sources = [(a.session, a.source) for a in self._loop.attached]
            self._loop.journal = open_journal(
                self.persistence, self.plan(), self._inputs, sources, self.time_shape.dims
            )
            self._loop.restore(self, self._inputs, hand_fed(self._inputs, sources))
        except BaseException as exc:
            if self._loop.journal is not None:
                self._restore_failure = exc
            raise
        finally:
            self._restoring = False
        for session in self._inputs:
            session.on_first_use = None

    def _deliver(self, poll_all: bool = False) -> None:
        """Calls capture subscribers with newly completed updates. ``poll_all``: every other
        capture also takes its new updates from the engine into its consolidated native
        state (after ``run_until`` / ``run``), so the engine does not hold a long run's raw
        output until the capture is first read (measured: peak RSS of a 100,000-update BFS
        run read once at the end, 230 MB -> 130 MB). A capture that cannot take them (a
        total outside int64) keeps them pending, losing nothing, and raises when read."""
        first: Exception | None = None
        for cap in self._captures:
            if cap._subscribers:
                try:  # every capture's subscribers are called, then the first error raised
                    cap._deliver()
                except Exception as exc:
                    first = first or exc
            elif poll_all:
                try:
                    cap._poll()
                except DdflowError:
                    pass
        self._loop.notify(False)
        if first is not None:
            raise first

    # -- running ------------------------------------------------------------------------------

    def step(self) -> bool:
        """One scheduling pass of the engine; True while work remains."""
        self._open_persistence()
        with self.gate:
            engine = self._flush()
            with self._run_guard("step()"):
                more = engine.step()
            self._deliver()
        return bool(more)

    def step_while(self, condition: Callable[[], bool]) -> int:
        """Steps while ``condition()`` holds and work remains; returns the number of steps."""
        steps = 0
        self._open_persistence()
        with self.gate:
            engine = self._flush()
        while condition():
            steps += 1
            with self.gate:
                with self._run_guard("step_while()"):
                    more = engine.step()
                self._deliver()
            if not more:
                break
        return steps

    def run_until(self, time: Time) -> None:
        """Runs until no output frontier holds a time strictly less than ``time``.

        Advance the inputs first (``advance_to``): outputs complete only up to their frontiers.
        """
        self._open_persistence()
        if type(time) is int and self.time_shape.dims == 1 and 0 <= time <= INT64_MAX:
            coords: Coords = (time,)  # the common case, without normalize's checks
        else:
            coords = self.time_shape.normalize(time, "run_until")
        gate = self.gate
        with gate:
            engine = self._started()
            for session in self._inputs:
                session.flush_held()
            gate.check_idle()
            gate.running = f"run_until({time!r})"
            try:  # the gate is held: the engine's own method, not the gated wrapper's
                ungated(engine).run_until(list(coords))
            except RuntimeError as exc:
                gate.raise_if_borrowed("run_until", exc)
                raise
            finally:
                gate.running = None
            self._deliver(poll_all=True)
            if self.persistence is not None:
                self._loop.after_run(int(coords[0]), self._inputs)

    def run(self, progress: bool | Callable[[RunProgress], Any] | None = None) -> None:
        """Runs until all work is done (all outputs complete once every input is closed).

        With sources attached (``dd.io``), drives them until they all end, ``stop()`` or
        Ctrl-C, completing every time they pushed before returning (see
        :mod:`ddflow.runloop`; a Ctrl-C then raises ``KeyboardInterrupt``). ``progress``
        (with sources): ``True`` draws a progress bar, or a status line where a source does
        not know its size; a callable gets a :class:`~ddflow.progress.RunProgress` after
        every tick; ``False`` nothing; by default ``True`` when stderr is a terminal (see
        :mod:`ddflow.progress`).
        """
        self._open_persistence()
        if self._loop.attached:
            previous = self._loop.reporter
            self._loop.reporter = reporter(self._loop, progress)
            try:
                self._loop.run(self, self._inputs, self._run_all)
            finally:
                self._loop.reporter = previous
        else:
            self._run_all()

    @property
    def resumed_since(self) -> int:
        """After a restart from a checkpoint, its frontier (0 otherwise): every output
        before it was delivered before the restart, and the sinks skip it."""
        return self._loop.resumed_since

    def stop(self) -> None:
        """Asks a running ``run()`` to stop cleanly after its current tick (callable from
        another thread or a callback)."""
        self._loop.stop()

    def close(self) -> None:
        """Closes the attached sources, releasing what they hold outside this process (a
        PostgreSQL source's replication slot and connection, unless it is durable), for a
        dataflow that will not run again: a ``run()`` that stopped (``stop()``, Ctrl-C)
        leaves its sources open so that a later ``run()`` goes on, and until ``close()``
        they are released only when the dataflow is garbage. A later ``run()`` raises
        :class:`~ddflow.errors.PlanError`; the captures stay readable. Calling it again does
        nothing. Called from another thread while ``run()`` runs, it stops that run and waits
        for its clean stop first; from a callback of the run it raises
        :class:`~ddflow.errors.ReentrancyError`. ``with dd.Dataflow() as flow:`` closes it at
        the block's end."""
        self._loop.close()

    def __enter__(self) -> Dataflow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def attach_source(self, session: InputSession, source: Source) -> None:
        """Feeds ``session`` from ``source`` while ``run()`` runs (used by ``dd.io``);
        sources need int times, so this fixes ``time_dims`` to 1."""
        self.time_shape.fix(1)
        self._loop.attach(session, source)

    def on_progress(self, listener: Listener) -> None:
        """Calls ``listener(final)`` after every delivery of completed updates (``step``,
        ``run_until``, ``run``), and with ``final=True`` when a ``run()`` with sources ends
        (used by sinks)."""
        self._loop.listen(listener)

    def _run_all(self) -> None:
        """Runs until all work is done (``run()`` without sources)."""
        with self.gate:
            engine = self._flush()
            with self._run_guard("run()"):
                if all(session.closed for session in self._inputs):
                    engine.run()
                else:
                    while engine.step():
                        pass
            self._deliver(poll_all=True)

    # -- errors as data -----------------------------------------------------------------------

    def poll_errors(self) -> ErrorLog:
        """Takes new error updates from the engine into the dataflow's error log; returns
        the log."""
        engine = self.started_engine()
        if engine is not None:
            self._error_log.dims = self.time_shape.dims or 1
            self._error_log.add(engine.errors_take())
        return self._error_log

    def plan_dtypes(self, node: int) -> list[str | None]:
        """The dtypes of ``node``'s columns as far as the plan and the data so far tell
        (``plan_dtypes.PlanDtypes`` over the dtypes the engine knows; ``None`` where neither
        does, or before the engine starts)."""
        engine = self.started_engine()
        if engine is None:
            return [None] * len(self.builder.plan.nodes[node]["columns"])
        nodes = self.plan()["nodes"]
        return PlanDtypes(nodes, engine.column_dtypes).of(node)

    def upstream(self, node: int) -> frozenset[int]:
        """Every node whose output can reach ``node`` (itself included), following inputs
        and the feedback edge of each ``iterate`` variable."""
        return self.builder.upstream(node)

    def late(self, name: str | None = None) -> Collection:
        """The records the dataflow's watermarks dropped as late (``with_watermark``): their
        columns and ``operator``, the watermark's name; ``name`` picks one watermark (needed
        when watermarks drop records of different columns). See :mod:`ddflow.event_time`."""
        ref = event_time.late(self.builder, name)
        return Collection(self, ref.node, ref.columns, ref.scope)

    def errors(self) -> pa.Table:
        """Every error update so far, consolidated: ``operator``, ``message``, ``values``
        (the offending record), ``time``, ``diff``. An error is live at ``t`` while its diffs
        at times ``<= t`` sum to non-zero; ``errors_at(t)`` lists those."""
        log = self.poll_errors()
        return log.table(None, lambda t: True, self.time_shape.to_user)

    def errors_at(self, time: Time) -> list[dict[str, Any]]:
        """The errors live at ``time`` anywhere in the dataflow: dicts with ``operator``,
        ``message``, ``values``, ``count`` and ``since`` (their first time)."""
        coords = self.time_shape.normalize(time, "errors_at", fix=False)
        live = self.poll_errors().live_at(coords)
        for e in live:
            e["since"] = self.time_shape.to_user(e["since"])
        return live

    # -- introspection ------------------------------------------------------------------------

    def log(self) -> list[dict[str, Any]]:
        """One dict per operator invocation so far: ``node``, ``label``, ``op``, ``lower``,
        ``upper`` (time antichains), ``updates_in``, ``updates_out``, ``nanos``, ``python``
        (whether Python was entered)."""
        engine = self.started_engine()
        return [] if engine is None else [dict(entry) for entry in engine.log()]

    def log_table(self) -> pa.Table:
        """``log()`` as a pyarrow Table."""
        return pa.Table.from_pylist(self.log())

    def metrics(self) -> Metrics:
        """Per operator (plan node): records in and out, invocations and time spent (from
        the operator log, ``None`` with ``log=False``), the updates an arrangement holds,
        the frontier and how far it trails the inputs'; and the engine's heap bytes and
        passes (see :mod:`ddflow.metrics`; ``dd.serve_metrics`` serves them over HTTP)."""
        return collect(
            self.builder, self._inputs, self.time_shape.dims, self.started_engine(), self._log
        )


def _owner(trace: TraceHandle) -> Dataflow:
    """The dataflow whose arrangement ``trace`` holds (every trace handle is made by one)."""
    owner = trace.flow
    assert isinstance(owner, Dataflow)
    return owner
