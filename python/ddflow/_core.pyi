"""Type stub of the native module ``ddflow._core`` (built from ``rust/ddflow-py``).

Conventions shared by the kernel functions (see :mod:`ddflow.kernels` for the typed facade
that also accepts lists and pyarrow arrays):

* Columns are 1-D numpy arrays: ``int64``, ``uint64``, ``float64``, ``bool``, or ``object``
  arrays of ``str`` (``U``/``T`` string arrays are converted; narrower ints and floats are
  widened; other sequences go through ``numpy.asarray``). One conversion module
  (``rust/ddflow-py/src/convert/``) converts every array the module takes, with one
  uint64 policy: the kernels keep uint64 record columns as their own type; engine inputs,
  captures and ``eval_expr`` read uint64 columns, and the engine side its
  times and diffs, as int64 where every value fits (:class:`ddflow.errors.OverflowError`
  ``"<what>: value <v> at row <i> does not fit in int64"`` otherwise). The kernels' times
  and diffs are int64 only (``ddflow.kernels`` converts uint64 ones with the same check).
  Other dtypes raise :class:`ddflow.errors.SchemaTypeError`.
* Times are ``(n, k)`` int64 arrays (``k`` = 1..4 coordinates, product partial order) or
  ``(n,)`` arrays of one-coordinate times; coordinates are non-negative.
* A frontier argument is an ``int`` (one 1-D time), a sequence of ints (one time), a
  sequence of such sequences (several times), or an int array (1-D: one time; 2-D
  ``(m, k)``: ``m`` times). Frontiers are returned as ``list[list[int]]``.
* Kernels run with the GIL released; a Rust panic raises
  :class:`ddflow.errors.InternalError`.
* Bad input raises :mod:`ddflow.errors` classes that name the argument: ``ShapeError``,
  ``SchemaTypeError``, ``InvalidValueError``, ``UnsortedInputError``, ``OverflowError``,
  ``TimeError``.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import Any, final

import numpy as np
import numpy.typing as npt

_Frontier = int | Sequence[int] | Sequence[Sequence[int]] | npt.NDArray[np.integer[Any]]
_Updates = tuple[list[npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]
_OutColumn = npt.NDArray[Any] | tuple[npt.NDArray[Any], npt.NDArray[np.uint8]]
"""An output column: numpy, or a string column's Arrow buffers ``(offsets, utf8 bytes)``
(int32 offsets, or int64 beyond 2 GiB of text)."""
_Timed = tuple[list[_OutColumn], npt.NDArray[np.int64], npt.NDArray[np.int64]]
_Untimed = tuple[list[_OutColumn], npt.NDArray[np.int64]]

__version__: str
"""The package version."""
PLAN_OPERATORS: list[str]
"""Every plan operator's name (the engine's ``plan::Op`` variants): the operator catalogue."""
EXPR_FUNCTIONS: list[str]
"""Every expression library function's JSON ``op`` (the engine's ``expr::Func``)."""

# --- sorting and consolidation ---------------------------------------------------------

def sort_values(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Sorts an int64 or uint64 array ascending (LSD radix sort over the bits that vary);
    returns a new array of the same dtype."""

def sort_pairs(
    keys: npt.NDArray[Any], vals: npt.NDArray[Any]
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Sorts ``(key, val)`` pairs by key, then val. ``keys`` and ``vals`` are int64 or
    uint64 arrays of equal length; returns ``(keys, vals)`` with the input dtypes."""

def consolidate(
    columns: list[npt.NDArray[Any]], times: npt.NDArray[np.int64], diffs: npt.NDArray[np.int64]
) -> _Updates:
    """Sorts updates by (record, time), sums the diffs of equal (record, time) and drops zero
    sums. Returns ``(columns, times, diffs)``; ``times`` keeps the input's shape kind.

    Numeric columns sort by value, ``str`` columns are grouped in an unspecified order.
    Raises ``OverflowError`` if a sum leaves the int64 range. A ``str`` column may also be
    given in Arrow's layout (``ddflow.dtypes.Utf8Column``, without nulls), as it may to every
    kernel that takes record columns; it is interned from its buffers without the GIL.
    """

def consolidate_pairs(
    keys: npt.NDArray[Any], vals: npt.NDArray[Any], diffs: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[np.int64]]:
    """Consolidates untimed ``(key, val, diff)`` triples (int64/uint64 keys and vals):
    sorted by key then val, one row per distinct pair with a non-zero total."""

def release_sort_buffers() -> None:
    """Frees the calling thread's radix-sort scratch buffers (reused across calls)."""

# --- lattice -----------------------------------------------------------------------------

def less_equal(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """``a[i] <= b[i]`` in the product order. An argument of one time (shape ``(1, k)``) is
    broadcast; missing coordinates count as zero."""

def join(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Coordinate-wise maximum of ``a[i]`` and ``b[i]`` (broadcasting as ``less_equal``)."""

def meet(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Coordinate-wise minimum of ``a[i]`` and ``b[i]`` (broadcasting as ``less_equal``)."""

def advance_by(times: npt.NDArray[np.int64], frontier: _Frontier) -> npt.NDArray[np.int64]:
    """Advances each time by ``frontier``: the meet over ``f`` in ``frontier`` of
    ``join(t, f)``. An empty frontier leaves times unchanged."""

def antichain(times: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The minimal elements of a set of times, sorted lexicographically."""

def frontier_less_equal(frontier: _Frontier, times: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Whether each time is in the future of ``frontier`` (some element ``<=`` it)."""

def interesting_times(
    edits: npt.NDArray[np.int64], new_times: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Joins of a subset of ``edits`` with a non-empty subset of ``new_times``, sorted
    lexicographically and deduplicated (output-sensitive coordinate sweep)."""

def interesting_times_reference(
    edits: npt.NDArray[np.int64], new_times: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """``interesting_times`` by the quadratic reference algorithm (for tests)."""

# --- traces ------------------------------------------------------------------------------

@final
class Trace:
    """An arranged collection: a spine of immutable batches indexed by key then value, with
    fueled merges that compact times by the meet of its readers' frontiers.

    Records are ``key_columns`` key columns followed by value columns. The trace object is
    the writer and a reader; ``handle()`` makes more readers. Reads return consolidated
    updates with times advanced by the reader's compaction frontier, in trace order: key,
    then value (int64 by two's-complement bits, i.e. non-negative ascending then negative
    ascending; str by interned id), then time.
    """

    def __init__(self, dtypes: Sequence[str], key_columns: int, time_dims: int = 1) -> None:
        """An empty trace; ``dtypes`` are ``"int64"``, ``"uint64"``, ``"float64"``,
        ``"bool"`` or ``"str"``."""

    @classmethod
    def from_columns(
        cls,
        columns: list[npt.NDArray[Any]],
        key_columns: int,
        times: npt.NDArray[np.int64] | None = None,
        diffs: npt.NDArray[np.int64] | None = None,
    ) -> Trace:
        """A trace holding one batch built from columns (dtypes from the arrays, time
        dimension from ``times``; default least time and diff 1)."""

    @classmethod
    def from_static_pairs(
        cls, src: npt.NDArray[Any], dst: npt.NDArray[Any], time_dims: int = 1
    ) -> Trace:
        """A static graph: ``(src, dst)`` at the least time with diff 1 (repeats add up),
        keyed by ``src``; int64/uint64 ids are packed, radix-sorted and stored narrowed to
        32 bits when they fit."""

    def insert(
        self,
        columns: list[npt.NDArray[Any]],
        times: npt.NDArray[np.int64] | None = None,
        diffs: npt.NDArray[np.int64] | None = None,
        *,
        upper: _Frontier | None = None,
        sorted: bool = False,
    ) -> None:
        """Builds a batch and inserts it. Times must be in the future of the trace's
        compaction frontier (``TimeError``); ``upper`` becomes the trace's upper (default:
        one past the largest first coordinate, joined with the previous upper). With
        ``sorted=True`` the updates must be in trace order (``UnsortedInputError``)."""

    def exert(self, fuel: int | None = None) -> bool:
        """Does up to ``fuel`` units of merge work (all if ``None``); returns whether work
        remains."""

    def n_batches(self) -> int:
        """Number of batches (inputs of a merge in progress count separately)."""

    def readers(self) -> int:
        """Number of live readers (the trace and its unreleased handles)."""

    def handle(self) -> TraceHandle:
        """A new reader at the trace's current compaction frontier."""

    def to_columns(self) -> _Updates:
        """The whole trace as ``(columns, times (n, time_dims), diffs)``."""

    def read_keys(self, keys: list[npt.NDArray[Any]]) -> _Updates:
        """Histories of the given keys (one array per key column) with all columns."""

    def read_range(self, lo: int | None = None, hi: int | None = None) -> _Updates:
        """Updates of keys in ``[lo, hi)`` in value order; traces keyed by one int64 or
        uint64 column only."""

    def key_history(self, key: Any) -> _Updates:
        """History of one key (scalar or tuple) as ``(value columns, times, diffs)``."""

    def advance_compaction(self, frontier: _Frontier) -> None:
        """Advances this reader's compaction frontier (``TimeError`` if it would go back)."""

    def compaction_frontier(self) -> list[list[int]]:
        """This reader's compaction frontier."""

    def upper(self) -> list[list[int]]:
        """The trace's upper frontier."""

    def __len__(self) -> int:
        """Updates physically stored."""

    def len(self) -> int:
        """Updates physically stored (all batches and merges in progress)."""

    def heap_bytes(self) -> int:
        """Heap bytes held by the trace's batches and merges in progress."""

    @property
    def dtypes(self) -> list[str]:
        """Column dtype names."""

    @property
    def key_columns(self) -> int:
        """Number of leading key columns."""

    @property
    def time_dims(self) -> int:
        """Coordinates per time."""

@final
class TraceHandle:
    """A reader of a ``Trace`` with its own compaction frontier (from ``Trace.handle()``).

    The trace compacts to the meet of its readers' frontiers; ``release()``, leaving a
    ``with`` block, or garbage collection removes this reader's hold.
    """

    def release(self) -> None:
        """Releases the hold (idempotent); reading afterwards raises InvalidValueError."""

    @property
    def released(self) -> bool:
        """Whether the handle was released."""

    def __enter__(self) -> TraceHandle: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool: ...
    def to_columns(self) -> _Updates:
        """The whole trace as ``(columns, times (n, time_dims), diffs)``."""

    def read_keys(self, keys: list[npt.NDArray[Any]]) -> _Updates:
        """Histories of the given keys (one array per key column) with all columns."""

    def read_range(self, lo: int | None = None, hi: int | None = None) -> _Updates:
        """Updates of keys in ``[lo, hi)`` in value order (one int64/uint64 key column)."""

    def key_history(self, key: Any) -> _Updates:
        """History of one key (scalar or tuple) as ``(value columns, times, diffs)``."""

    def advance_compaction(self, frontier: _Frontier) -> None:
        """Advances this reader's compaction frontier."""

    def compaction_frontier(self) -> list[list[int]]:
        """This reader's compaction frontier."""

    def upper(self) -> list[list[int]]:
        """The trace's upper frontier."""

    def __len__(self) -> int:
        """Updates physically stored by the trace."""

    def len(self) -> int:
        """Updates physically stored by the trace."""

    def heap_bytes(self) -> int:
        """Heap bytes held by the trace."""

    @property
    def dtypes(self) -> list[str]:
        """Column dtype names."""

    @property
    def key_columns(self) -> int:
        """Number of leading key columns."""

    @property
    def time_dims(self) -> int:
        """Coordinates per time."""

# --- expressions (rust/ddflow-py/src/expr.rs) ---------------------------------------------

def eval_expr(
    expr_json: str, columns: dict[str, npt.ArrayLike], length: int | None = None
) -> npt.NDArray[Any]:
    """Evaluates an expression (JSON, see ``ddflow_core::expr``) on a dict of 1-D columns of
    equal length; ``length`` gives the row count when the expression reads no column.
    Other int and float widths are widened; uint64 is read as int64 where every value fits
    (OverflowError naming the first that does not). Returns an int64, float64 or bool
    array, or an object array of str. Raises ColumnNotFoundError, SchemaTypeError,
    OverflowError, DivisionByZeroError, ShapeError, PlanError (malformed JSON)."""

def expr_repr(expr_json: str) -> str:
    """The core's text form of an expression."""

def expr_output_name(expr_json: str) -> str:
    """The output column name of an expression."""

def expr_dtype(expr_json: str, schema: list[tuple[str, str]]) -> str:
    """The output dtype name (``"int64"``, ``"float64"``, ``"bool"`` or ``"str"``) of an
    expression bound to ``schema`` (``(name, dtype name)`` pairs)."""

# --- engine (rust/ddflow-py/src/engine.rs) ------------------------------------------------

@final
class Engine:
    """A running dataflow built from a plan (JSON); see PLAN.md for the semantics."""

    def __init__(
        self, plan_json: str, workers: int, callback: Callable[[int, str, Any], Any]
    ) -> None:
        """Builds the dataflow; ``callback(fn_id, kind, payload)`` runs user functions."""

    def push(
        self,
        input_node: int,
        columns: list[npt.NDArray[Any]],
        times: npt.NDArray[np.int64],
        diffs: npt.NDArray[np.int64],
    ) -> None:
        """Adds updates to an input (all or nothing)."""

    def push_int_rows(
        self,
        input_node: int,
        width: int,
        rows: Sequence[Sequence[Any]],
        times: Sequence[tuple[int, ...]],
        diffs: Sequence[int],
    ) -> bool:
        """Adds an input's buffered single updates, every column int64, as Python rows (all
        or nothing); False, adding nothing, at the first value or time it cannot take."""

    def advance_input(self, input_node: int, time: list[int]) -> None:
        """Advances an input's frontier to ``time``."""

    def close_input(self, input_node: int) -> None:
        """Closes an input: its frontier becomes empty."""

    def step(self) -> bool:
        """One scheduling pass; True while another pass may make progress."""

    def run_until(self, time: list[int]) -> None:
        """Runs until no capture/probe frontier holds a time strictly less than ``time``."""

    def run(self) -> None:
        """Runs until all inputs are closed and all work is done."""

    def frontier(self, node: int) -> list[list[int]]:
        """The frontier at a node's inputs ([] when complete)."""

    def capture_take(
        self, node: int
    ) -> tuple[list[npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Updates captured since the last take: (columns, times (n, time_dims), diffs)."""

    def capture_poll(self, node: int, state: CaptureState) -> CaptureBatch | None:
        """Takes a capture's new updates into ``state``; returns those its frontier completes,
        consolidated (``None`` if there are none), converted only when unpacked."""

    def errors_take(self) -> list[tuple[int, str, str, str, list[int], int]]:
        """Error updates since the last call: ``(node, label, message, values, time, diff)``."""

    def log(self) -> list[dict[str, Any]]:
        """The operator log: one dict per operator invocation."""

    def column_dtypes(self, node: int) -> list[str | None]:
        """The dtype names of a node's columns known so far (None where no data has shown
        one yet)."""

    def heap_bytes(self) -> int:
        """Heap bytes held by the engine's traces."""

    def node_heap_bytes(self) -> list[tuple[int, int]]:
        """Heap bytes per plan node, summed over workers: ``(state, queued)`` (its trace and
        operator state; the updates waiting at its inputs)."""

    def passes(self) -> int:
        """Number of scheduling passes run."""

    def set_logging(self, on: bool) -> None:
        """Enables or disables the operator log (on by default)."""

    def set_memory_limit(self, limit: int | None) -> None:
        """Sets the memory limit in bytes (``None``: no limit)."""

    def memory_limit(self) -> int | None:
        """The memory limit in bytes (``None``: no limit)."""

    def set_spill_dir(self, dir: str | None) -> None:
        """Sets the directory cold trace batches are spilled to (``None``: the default,
        ``DDFLOW_SPILL_DIR`` or the system's temporary directory)."""

    def spilled_bytes(self) -> int:
        """Bytes of the engine's traces held in spill files (mapped, not on the heap)."""

    def attach(self, plan_json: str) -> int:
        """Attaches another dataflow's plan (its ``import_trace`` nodes name this engine's
        top-level arrangements); returns the offset of its node ids in this engine."""

    def trace_handle(self, node: int) -> int:
        """A handle holding back compaction of a top-level arrangement's trace (its id)."""

    def set_handle_frontier(self, handle: int, time: list[int]) -> None:
        """Moves a trace handle's frontier forward (never back)."""

    def close_handle(self, handle: int) -> None:
        """Releases a trace handle."""

    def trace_len(self, node: int) -> int:
        """Updates stored in an arrangement's trace, summed over workers."""

def _plan_round_trip(plan_json: str) -> str:
    """The plan as the engine reads it and writes it back (a test hook: the builder's JSON
    against the serde plan types)."""

# --- capture state (rust/ddflow-py/src/capture.rs) ---------------------------------------

@final
class CaptureBatch:
    """Newly completed updates, consolidated, held natively until unpacked:
    ``columns, times, diffs = batch`` converts them (a ``_Timed`` triple) at that moment, so
    a poll whose result nobody reads converts nothing."""

    def __len__(self) -> int:
        """Number of updates."""

    def __iter__(self) -> Iterator[Any]:
        """The columns, the ``(n, time_dims)`` times and the diffs, converted now."""

@final
class CaptureState:
    """A capture's pending updates and what it keeps of completed ones (``keep``:
    ``"history"`` or ``"state"``). Output is consolidated per (record, time) with checked
    sums, sorted by (record words, time)."""

    def __init__(self, label: str, columns: list[str], time_dims: int, keep: str) -> None: ...
    def absorb(
        self,
        columns: list[npt.NDArray[Any]],
        times: npt.NDArray[np.int64],
        diffs: npt.NDArray[np.int64],
        frontier: list[list[int]],
    ) -> CaptureBatch | None:
        """Adds raw updates (from an engine other than the native one); returns those
        ``frontier`` completes, consolidated (``None`` if there are none)."""

    def kept(self) -> _Timed:
        """Every completed update (history), or the accumulated collection (state)."""

    def kept_ordered(
        self,
    ) -> tuple[list[_OutColumn], npt.NDArray[np.int64], npt.NDArray[np.int64], bool]:
        """As ``kept``, plus whether the updates come sorted by time, then record values (done
        in Rust where the record dtypes allow it)."""

    def at(self, time: list[int]) -> _Untimed:
        """The accumulated collection at a completed ``time``; in ``"state"`` mode only for
        times at or after every completed update (``TimeError`` otherwise)."""

    def state(self) -> _Untimed:
        """The accumulated collection of every completed update."""

    def dtypes(self) -> list[str] | None:
        """The record dtypes (``None`` before the first update)."""

    def completed_upper(self) -> list[int] | None:
        """The least upper bound of the completed updates' times (``None`` before any)."""

    def heap_bytes(self) -> int:
        """Heap bytes held."""

# --- memory (rust/ddflow-py/src/memory.rs) -----------------------------------------------

def memory_live_bytes() -> int:
    """Bytes live in ddflow's Rust heap across the process."""

def spilled_bytes_total() -> int:
    """Bytes written to spill files by this process so far."""

def trim_memory() -> bool:
    """Gives the allocator's free pages back to the system when the resident memory beyond
    ddflow's heap grew since the last time; whether it did."""

def default_memory_limit() -> int | None:
    """The process default limit (``DDFLOW_MEMORY_LIMIT``, else 80% of the machine's)."""

def machine_memory_limit() -> int | None:
    """80% of the smaller of physical memory and the cgroup limit."""

def parse_memory_limit(text: str) -> int | None:
    """Bytes of a size such as ``"4GB"`` (``None`` for ``"none"``)."""

def string_memory() -> dict[str, int]:
    """The interner's size and the string collector's counters: ``strings``,
    ``string_bytes``, ``arena_bytes``, ``collections``, ``freed``."""

def collect_strings() -> int | None:
    """Frees the interned strings no live data holds; the number freed (``None``: busy)."""

# --- errors (rust/ddflow-py/src/errors.rs) -----------------------------------------------

def _error_examples() -> int:
    """The number of example core errors, one per variant (for the mapping test)."""

def _raise_error_example(i: int) -> None:
    """Raises example core error ``i`` as its ``ddflow.errors`` class."""

def canonical_dtype(name: str) -> str:
    """The engine's name for the dtype ``name``; ``SchemaTypeError`` for one it cannot hold."""

def physical_dtype(name: str) -> str:
    """The physical dtype (int64, float64, bool or str) the words of ``name`` are read as."""

def render_word(name: str, value: int) -> str:
    """The text of an int64-stored value of the logical dtype ``name``."""

def plan_live_columns(plan_json: str, pinned: list[int]) -> list[list[bool]]:
    """Per node of the plan, per column: whether some operator reads it (``pinned`` nodes
    keep every column)."""
