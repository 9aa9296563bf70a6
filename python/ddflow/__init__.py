"""ddflow: differential dataflow for Python, run by a Rust engine.

Build a dataflow from inputs and operators, feed it updates ``(record, time, diff)``, and read
the exact output changes::

    import ddflow as dd
    flow = dd.Dataflow()
    edges_in, edges = flow.new_input(("src", "dst"))
    roots_in, roots = flow.new_input(("node",))
    out = dd.algorithms.bfs(edges, roots).capture()
    edges_in.update_at((0, 3), time=0, diff=+1); roots_in.insert(0)
    edges_in.advance_to(1); roots_in.advance_to(1); flow.run_until(1)
    out.updates()   # pyarrow.Table: node, dist, time, diff

The package is built in layers; a module imports only from its own layer or below, never in
a circle (``tests/api/test_layers.py`` checks both against this table)::

    6 tools:    doctor, metrics_http
    5 owner:    dataflow
    4 handles:  collection, records
    3 runtime:  engine, input, capture, traces, sources, runloop, metrics, progress, persist
    3 runtime:  memory
    2 plan:     expr, plan, callbacks, functions, aggregates, builder, joins, reducing, grouping
    2 plan:     expr_functions, expr_str, expr_dt, outer_joins, read_columns, plan_dtypes
    2 plan:     plan_graph, event_time, windows, constants, temporal
    1 values:   _core, errors, logical_types, dtypes, times, errorlog, kernels, gate
    1 values:   batch_columns

1. values: the native module, errors, dtypes and time coordinates, the error log, kernels,
   the gate that lets one thread at a time into an engine.
2. plan: expressions, the plan's operator nodes, user functions and aggregates, and the
   builders that add nodes (:class:`~ddflow.builder.PlanBuilder`; joins and reduces).
3. runtime: the engine and its view when shared (:mod:`~ddflow.engine`), and what reads or
   feeds a running dataflow through the :class:`~ddflow.engine.Runtime` interface: inputs,
   captures and probes, trace handles; sources and the run loop that drives them, and its
   log and checkpoints (``persist``); metrics and the run's progress display; the memory
   limit (``memory``).
4. handles: ``Collection`` and ``Arrangement``, which build through the
   :class:`~ddflow.records.PlanOwner` interface.
5. owner: ``Dataflow``, which implements both interfaces. ``algorithms``, ``examples``,
   ``io`` (connectors), ``sql`` (the SQL front end) and ``spark`` sit on top of the package.
6. tools: ``python -m ddflow.doctor`` (versions and whether they fit together) and the
   Prometheus endpoint (``dd.serve_metrics``); nothing in the package imports them.
"""

from __future__ import annotations

from ddflow import _core as _core
from ddflow import algorithms, io
from ddflow.aggregates import count, count_distinct, distinct, max, mean, min, reducer, sum, top_k
from ddflow.callbacks import ReduceBatch
from ddflow.capture import Capture, Probe
from ddflow.collection import Arrangement, Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import (
    ColumnNotFoundError,
    CorruptCheckpointError,
    DataError,
    DdflowError,
    DivisionByZeroError,
    InternalError,
    InvalidValueError,
    MemoryLimitError,
    OverflowError,
    PersistenceError,
    PlanError,
    ReentrancyError,
    SchemaTypeError,
    ShapeError,
    SpillError,
    TimeError,
    UnsortedInputError,
    UserFunctionError,
)
from ddflow.expr import coalesce, col, concat_str, lit, max_of, min_of, when
from ddflow.input import InputSession
from ddflow.io.subscribe import subscribe
from ddflow.metrics import Metrics, OperatorMetrics
from ddflow.metrics_http import serve_metrics
from ddflow.persist import Persistence
from ddflow.progress import RunProgress
from ddflow.sources import SourceError
from ddflow.sql import SqlError, sql
from ddflow.temporal import duration, now
from ddflow.traces import TraceHandle

__version__ = _core.__version__
__all__ = [
    "Dataflow",
    "Collection",
    "Arrangement",
    "InputSession",
    "Probe",
    "Capture",
    "TraceHandle",
    "col",
    "lit",
    "when",
    "min_of",
    "max_of",
    "concat_str",
    "coalesce",
    "now",
    "duration",
    "min",
    "max",
    "sum",
    "mean",
    "count",
    "count_distinct",
    "distinct",
    "top_k",
    "reducer",
    "ReduceBatch",
    "algorithms",
    "io",
    "subscribe",
    "Metrics",
    "OperatorMetrics",
    "serve_metrics",
    "RunProgress",
    "SourceError",
    "DdflowError",
    "ShapeError",
    "SchemaTypeError",
    "InvalidValueError",
    "UnsortedInputError",
    "OverflowError",
    "TimeError",
    "ColumnNotFoundError",
    "PlanError",
    "DivisionByZeroError",
    "UserFunctionError",
    "InternalError",
    "MemoryLimitError",
    "SpillError",
    "ReentrancyError",
    "DataError",
    "Persistence",
    "PersistenceError",
    "CorruptCheckpointError",
    "sql",
    "SqlError",
    "__version__",
]
