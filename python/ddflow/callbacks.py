"""The dispatcher the engine calls to run users' Python functions on batches of columns.

Each :class:`~ddflow.dataflow.Dataflow` owns one :class:`Dispatcher`. Building the plan
registers every user function (``map``, ``flat_map``, ``filter`` with a function, Python
reducers, ``threshold``, ``inspect``) and writes its id into the node; while the dataflow runs,
the engine calls ``dispatcher(fn_id, kind, payload)`` once per batch with the payloads described
in PLAN.md ("Callbacks into Python"). The dispatcher converts payloads, calls the function,
validates what it returns (raising :class:`~ddflow.errors.UserFunctionError` naming the operator,
the column and the problem), and returns canonical numpy columns to the engine. An ordinary
exception raised by the user's function becomes error updates for the records of that call
(errors are data); only ``KeyboardInterrupt`` and ``ReentrancyError`` stop the run and are
re-raised as themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ddflow.dtypes import array_dtype, empty_column, to_column
from ddflow.errors import DdflowError, OverflowError, PlanError, UserFunctionError
from ddflow.gate import callback_scope

__all__ = [
    "Dispatcher",
    "Registered",
    "ReduceBatch",
    "ROW",
    "OFFSETS",
    "COUNT",
    "RESERVED",
    "KINDS",
]

ROW = "__row__"
"""The column a ``flat_map`` function returns: for each output row, its source row index."""

OFFSETS = "__offsets__"
"""The key under which a reducer's offsets are handed to the engine."""

COUNT = "__count__"
"""The key under which a reducer's output counts are handed to the engine."""

RESERVED = {
    ROW: "a flat_map's source row indices",
    OFFSETS: "a reducer's group offsets",
    COUNT: "a reducer's output counts",
}
"""The names no user function may give an output column, and what the engine reads there."""

KINDS = ("map_py", "flat_map_py", "filter_py", "reduce_py", "threshold_py", "inspect_py")
"""The callback kinds the engine uses."""


@dataclass
class Registered:
    """A user function as registered in the plan."""

    kind: str
    fn: Callable[..., Any]
    label: str
    columns: tuple[str, ...] = ()
    """Output columns (map / flat_map / Python reducer)."""
    key_columns: tuple[str, ...] = ()
    """Key columns (Python reducer)."""
    vectorized: bool = True
    """threshold: whether ``fn`` takes the whole count array (else one count at a time)."""
    batch: bool = True
    """inspect: whether ``fn`` takes whole batches (else one update at a time)."""
    to_user_time: Callable[[Sequence[int]], Any] | None = None
    """inspect (per update): converts time coordinates to the user's form."""
    dtypes: dict[str, str] = field(default_factory=dict)
    """Output dtypes seen so far, used for zero-length outputs."""

    def __post_init__(self) -> None:
        """Refuses output columns named as the engine's reserved keys."""
        for name in self.columns:
            if name in RESERVED:
                raise PlanError(
                    f"{self.label}: output column name {name!r} is reserved (the engine reads "
                    f"{RESERVED[name]} under it); rename the column"
                )


@dataclass
class ReduceBatch:
    """A batch of keys handed to a Python reducer, with each key's values grouped.

    ``keys`` maps each key column to an array with one entry per key; ``offsets`` (int64,
    ``len(keys) + 1``) delimits each key's rows in ``values`` (val columns) and ``counts``
    (their signed accumulated counts). The reducer returns a dict with ``offsets`` (one more
    than the number of keys) and its output columns (rows per key, in key order), optionally
    with a ``count`` column (default: count 1 per output row).
    """

    keys: dict[str, npt.NDArray[Any]]
    offsets: npt.NDArray[np.int64]
    values: dict[str, npt.NDArray[Any]]
    counts: npt.NDArray[np.int64]

    def __len__(self) -> int:
        """The number of keys."""
        return len(self.offsets) - 1

    def groups(
        self,
    ) -> Iterator[tuple[tuple[Any, ...], dict[str, npt.NDArray[Any]], npt.NDArray[np.int64]]]:
        """Per key: the key as a tuple, its value columns and its counts (a Python loop)."""
        key_lists = [c.tolist() for c in self.keys.values()]
        for i in range(len(self)):
            lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
            key = tuple(k[i] for k in key_lists)
            yield key, {n: c[lo:hi] for n, c in self.values.items()}, self.counts[lo:hi]


class Dispatcher:
    """The per-dataflow table of user functions and the callback the engine calls."""

    def __init__(self) -> None:
        """An empty table."""
        self._fns: list[Registered] = []

    def register(self, entry: Registered) -> int:
        """Adds a function and returns the id the plan refers to it by."""
        self._fns.append(entry)
        return len(self._fns) - 1

    def truncate(self, n: int) -> None:
        """Forgets functions registered after the first ``n`` (plan rollback)."""
        del self._fns[n:]

    def __len__(self) -> int:
        """The number of registered functions."""
        return len(self._fns)

    def __getitem__(self, fn_id: int) -> Registered:
        """The registered function with id ``fn_id``."""
        return self._fns[fn_id]

    def __call__(self, fn_id: int, kind: str, payload: Any) -> Any:
        """Runs function ``fn_id`` on one batch; called by the engine."""
        entry = self._fns[fn_id]
        if kind != entry.kind:
            raise UserFunctionError(
                f"{entry.label}: engine called a {entry.kind} function as {kind} (a ddflow bug)"
            )
        handler = _HANDLERS[kind]
        with callback_scope():
            return handler(entry, payload)


def _call(entry: Registered, *args: Any) -> Any:
    """Calls the user function; its exceptions propagate with a note naming the operator."""
    try:
        return entry.fn(*args)
    except DdflowError:
        raise
    except Exception as exc:
        exc.add_note(f"ddflow: raised by the user function of {entry.label} ({entry.kind})")
        raise


def _length(payload: Mapping[str, npt.NDArray[Any]]) -> int:
    """The number of rows in a dict of equal-length columns (0 when it has none)."""
    for arr in payload.values():
        return len(arr)
    return 0


def _column(entry: Registered, name: str, values: object) -> npt.NDArray[Any]:
    """One returned column in canonical form, or a ``UserFunctionError`` naming it."""
    try:
        arr = to_column(values, f"{entry.label}: returned column {name!r}")
    except DdflowError as exc:
        raise UserFunctionError(str(exc)) from None
    if len(arr) == 0 and arr.dtype.kind == "f" and entry.dtypes.get(name, "float64") != "float64":
        arr = empty_column(entry.dtypes[name])
    elif len(arr):
        entry.dtypes.setdefault(name, array_dtype(arr))
    return arr


def _named_result(entry: Registered, result: object, extra: Sequence[str] = ()) -> dict[str, Any]:
    """A dict of returned columns keyed by the declared names (dict or tuple results)."""
    expected = list(entry.columns) + list(extra)
    if isinstance(result, Mapping):
        got = list(result.keys())
        missing = [c for c in expected if c not in result]
        unexpected = [c for c in got if c not in expected]
        if missing or unexpected:
            raise UserFunctionError(
                f"{entry.label}: the function returned columns {got}, expected {expected}"
                + (f" (missing {missing})" if missing else "")
                + (f" (unexpected {unexpected})" if unexpected else "")
            )
        return {c: result[c] for c in expected}
    if isinstance(result, tuple | list) and not extra:
        if len(result) != len(expected):
            raise UserFunctionError(
                f"{entry.label}: the function returned {len(result)} columns, "
                f"expected {len(expected)} ({expected})"
            )
        return dict(zip(expected, result, strict=True))
    raise UserFunctionError(
        f"{entry.label}: the function must return a dict of columns"
        + ("" if extra else " (or a tuple)")
        + f", got {type(result).__name__}"
    )


def _map(entry: Registered, payload: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
    n = _length(payload)
    result = _named_result(entry, _call(entry, payload))
    out = {}
    for name, values in result.items():
        arr = _column(entry, name, values)
        if len(arr) != n:
            raise UserFunctionError(
                f"{entry.label}: column {name!r} has {len(arr)} rows, the input batch has {n}"
            )
        out[name] = arr
    return out


def _flat_map(
    entry: Registered, payload: dict[str, npt.NDArray[Any]]
) -> dict[str, npt.NDArray[Any]]:
    n = _length(payload)
    result = _named_result(entry, _call(entry, payload), extra=(ROW,))
    rows = _column(entry, ROW, result.pop(ROW))
    if rows.dtype.kind != "i":
        raise UserFunctionError(
            f"{entry.label}: column {ROW!r} must hold integer source row indices, "
            f"got dtype {rows.dtype}"
        )
    if len(rows) and (rows.min() < 0 or rows.max() >= n):
        bad = rows[(rows < 0) | (rows >= n)][0]
        raise UserFunctionError(
            f"{entry.label}: column {ROW!r} holds row index {int(bad)}, "
            f"outside the input batch of {n} rows"
        )
    out = {}
    for name, values in result.items():
        arr = _column(entry, name, values)
        if len(arr) != len(rows):
            raise UserFunctionError(
                f"{entry.label}: column {name!r} has {len(arr)} rows, {ROW!r} has {len(rows)}"
            )
        out[name] = arr
    out[ROW] = rows
    return out


def _filter(entry: Registered, payload: dict[str, npt.NDArray[Any]]) -> npt.NDArray[np.bool_]:
    n = _length(payload)
    result = _call(entry, payload)
    mask = np.asarray(result)
    if mask.dtype != np.bool_ or mask.shape != (n,):
        raise UserFunctionError(
            f"{entry.label}: a filter function must return a bool array of the batch's length "
            f"{n}, got {'dtype ' + str(mask.dtype)} shape {mask.shape}"
        )
    return np.ascontiguousarray(mask)


def _reduce(entry: Registered, payload: dict[str, Any]) -> dict[str, npt.NDArray[Any]]:
    batch = ReduceBatch(
        keys=dict(payload["keys"]),
        offsets=np.asarray(payload["offsets"], dtype=np.int64),
        values=dict(payload["values"]),
        counts=np.asarray(payload["counts"], dtype=np.int64),
    )
    result = _call(entry, batch)
    if not isinstance(result, Mapping):
        raise UserFunctionError(
            f"{entry.label}: a reducer must return a dict with 'offsets' and columns "
            f"{list(entry.columns)}, got {type(result).__name__}"
        )
    if "offsets" not in result:
        raise UserFunctionError(f"{entry.label}: the reducer's result has no 'offsets' column")
    count_key = "count" if "count" not in entry.columns else None
    body = {k: v for k, v in result.items() if k not in ("offsets", count_key)}
    columns = _named_result(entry, body)
    offsets = _column(entry, "offsets", result["offsets"])
    n_keys = len(batch)
    if offsets.dtype.kind != "i" or offsets.shape != (n_keys + 1,):
        raise UserFunctionError(
            f"{entry.label}: 'offsets' must be {n_keys + 1} integers (keys + 1), "
            f"got dtype {offsets.dtype} shape {offsets.shape}"
        )
    n_out = int(offsets[-1])
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0):
        raise UserFunctionError(
            f"{entry.label}: 'offsets' must start at 0 and never decrease, got {offsets.tolist()}"
        )
    out: dict[str, npt.NDArray[Any]] = {OFFSETS: offsets}
    for name, values in columns.items():
        out[name] = _rows_column(entry, name, values, n_out)
    if count_key is not None and count_key in result:
        counts = _rows_column(entry, count_key, result[count_key], n_out)
        if counts.dtype.kind != "i":
            raise UserFunctionError(
                f"{entry.label}: 'count' must hold int counts, got dtype {counts.dtype}"
            )
        out[COUNT] = counts
    return out


def _rows_column(entry: Registered, name: str, values: object, n_out: int) -> npt.NDArray[Any]:
    """A reducer's output column, which must have ``n_out`` rows (the last offset)."""
    arr = _column(entry, name, values)
    if len(arr) != n_out:
        raise UserFunctionError(
            f"{entry.label}: column {name!r} has {len(arr)} rows, 'offsets' ends at {n_out}"
        )
    return arr


def _threshold(entry: Registered, payload: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    counts = np.asarray(payload, dtype=np.int64)
    if entry.vectorized:
        result = np.asarray(_call(entry, counts))
    else:
        uniq, inverse = np.unique(counts, return_inverse=True)
        values = []
        for c in uniq:
            v = _call(entry, c)
            arr = np.asarray(v)
            if arr.ndim != 0 or arr.dtype.kind not in "iu":
                raise UserFunctionError(
                    f"{entry.label}: threshold function returned {v!r} for count {c}; "
                    f"it must return an int"
                )
            if not -(2**63) <= int(arr) < 2**63:
                raise OverflowError(
                    f"{entry.label}: threshold function returned {int(arr)} for count {c}, "
                    f"which does not fit in int64"
                )
            values.append(int(arr))
        result = np.asarray(values, dtype=np.int64)[inverse.reshape(-1)]
    if result.dtype.kind not in "iu" or result.shape != counts.shape:
        raise UserFunctionError(
            f"{entry.label}: threshold function must return int counts of shape "
            f"{counts.shape}, got dtype {result.dtype} shape {result.shape}"
        )
    if result.dtype.kind == "u" and result.size and int(result.max()) > 2**63 - 1:
        i = int(np.argmax(result))
        raise OverflowError(
            f"{entry.label}: threshold function returned {int(result[i])} (dtype "
            f"{result.dtype}) for count {int(counts[i])}, which does not fit in int64"
        )
    return np.ascontiguousarray(result, dtype=np.int64)


def _inspect(entry: Registered, payload: dict[str, Any]) -> None:
    """``payload``: ``{"columns": {name: array}, "time": int64 (n, dims), "diff": int64 (n,)}``.

    A batch function gets the columns, ``time`` and ``diff`` in one flat dict.
    """
    columns = payload["columns"]
    if entry.batch:
        _call(entry, {**columns, "time": payload["time"], "diff": payload["diff"]})
        return None
    times = np.asarray(payload["time"])
    diffs = np.asarray(payload["diff"]).tolist()
    cols = [np.asarray(v).tolist() for v in columns.values()]
    to_user = entry.to_user_time or tuple
    time_list = [to_user(t) for t in times.reshape(len(diffs), -1).tolist()]
    for i, record in enumerate(zip(*cols, strict=True)):
        _call(entry, record, time_list[i], diffs[i])
    return None


_HANDLERS: dict[str, Callable[[Registered, Any], Any]] = {
    "map_py": _map,
    "flat_map_py": _flat_map,
    "filter_py": _filter,
    "reduce_py": _reduce,
    "threshold_py": _threshold,
    "inspect_py": _inspect,
}
