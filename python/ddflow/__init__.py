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
"""

from __future__ import annotations

from ddflow import _core as _core
from ddflow import algorithms
from ddflow.aggregates import count, distinct, max, min, reducer, sum, top_k
from ddflow.arrangement import Arrangement
from ddflow.callbacks import ReduceBatch
from ddflow.capture import Capture, Probe
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import (
    ColumnNotFoundError,
    DataError,
    DdflowError,
    DivisionByZeroError,
    InternalError,
    InvalidValueError,
    OverflowError,
    PlanError,
    ReentrancyError,
    SchemaTypeError,
    ShapeError,
    TimeError,
    UnsortedInputError,
    UserFunctionError,
)
from ddflow.expr import col, lit, max_of, min_of, when
from ddflow.input import InputSession
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
    "min",
    "max",
    "sum",
    "count",
    "distinct",
    "top_k",
    "reducer",
    "ReduceBatch",
    "algorithms",
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
    "ReentrancyError",
    "DataError",
    "__version__",
]
