"""User Python functions as batch functions: row-wise wrappers and output-column discovery.

The engine calls Python once per batch of columns. ``map_rows`` / ``filter_rows`` /
``flat_map_rows`` are conveniences whose per-record functions are wrapped here into batch
functions. When a user does not declare a function's output columns, :func:`discover_columns`
calls it once on an empty batch while the plan is built and reads the names it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ddflow.callbacks import ROW
from ddflow.errors import PlanError, UserFunctionError

__all__ = [
    "discover_columns",
    "rows_map",
    "rows_filter",
    "rows_flat_map",
    "Batch",
    "output_names",
    "function_name",
]

Batch = dict[str, npt.NDArray[Any]]
"""A batch of columns: column name -> numpy array (object arrays for ``str``)."""


def discover_columns(
    fn: Callable[[Batch], Any],
    in_columns: Sequence[str],
    label: str,
    *,
    drop: Sequence[str] = (),
) -> tuple[str, ...]:
    """Output column names of a batch function, found by calling it on an empty batch.

    ``drop`` lists names that are not output columns (``__row__`` of flat_map). Raises
    ``PlanError`` asking for ``columns=`` when the call fails or returns no dict.
    """
    empty = {c: np.empty(0, dtype=np.int64) for c in in_columns}
    try:
        result = fn(empty)
    except Exception as exc:
        raise PlanError(
            f"{label}: could not find the function's output columns by calling it on an empty "
            f"batch ({type(exc).__name__}: {exc}); pass columns=[...]"
        ) from exc
    if not isinstance(result, Mapping):
        raise PlanError(
            f"{label}: the function returned {type(result).__name__} on an empty batch, so its "
            f"output column names are unknown; return a dict of columns or pass columns=[...]"
        )
    names = tuple(str(k) for k in result.keys() if k not in drop)
    if not names:
        raise PlanError(f"{label}: the function returns no columns")
    return names


def _records(batch: Batch, in_columns: Sequence[str]) -> Iterable[tuple[Any, ...]]:
    """The rows of a batch as tuples of Python scalars."""
    return zip(*(batch[c].tolist() for c in in_columns), strict=True)


def _as_record(value: Any, n_out: int, label: str) -> tuple[Any, ...]:
    """A returned record as a tuple (a bare value is a 1-column record)."""
    if isinstance(value, tuple | list):
        rec = tuple(value)
    elif n_out == 1 and not isinstance(value, Mapping):
        rec = (value,)
    else:
        raise UserFunctionError(f"{label}: a row function must return a tuple, got {value!r}")
    if len(rec) != n_out:
        raise UserFunctionError(
            f"{label}: a row function returned {len(rec)} values, expected {n_out}"
        )
    return rec


def _columns_of(rows: list[tuple[Any, ...]], out_columns: Sequence[str]) -> dict[str, Any]:
    """Per-column lists from a list of records."""
    if not rows:
        return {c: [] for c in out_columns}
    return {c: list(vals) for c, vals in zip(out_columns, zip(*rows, strict=True), strict=True)}


def rows_map(
    fn: Callable[[tuple[Any, ...]], Any],
    in_columns: Sequence[str],
    out_columns: Sequence[str],
    label: str,
) -> Callable[[Batch], dict[str, Any]]:
    """A batch function applying ``fn(record) -> record`` to every row."""
    n_out = len(out_columns)

    def batch_fn(batch: Batch) -> dict[str, Any]:
        rows = [_as_record(fn(r), n_out, label) for r in _records(batch, in_columns)]
        return _columns_of(rows, out_columns)

    return batch_fn


def rows_filter(
    fn: Callable[[tuple[Any, ...]], Any], in_columns: Sequence[str]
) -> Callable[[Batch], npt.NDArray[np.bool_]]:
    """A batch function keeping the rows for which ``fn(record)`` is truthy."""

    def batch_fn(batch: Batch) -> npt.NDArray[np.bool_]:
        n = len(next(iter(batch.values()))) if batch else 0
        return np.fromiter((bool(fn(r)) for r in _records(batch, in_columns)), bool, count=n)

    return batch_fn


def rows_flat_map(
    fn: Callable[[tuple[Any, ...]], Iterable[Any]],
    in_columns: Sequence[str],
    out_columns: Sequence[str],
    label: str,
) -> Callable[[Batch], dict[str, Any]]:
    """A batch function where ``fn(record)`` yields any number of output records."""
    n_out = len(out_columns)

    def batch_fn(batch: Batch) -> dict[str, Any]:
        rows: list[tuple[Any, ...]] = []
        sources: list[int] = []
        for i, r in enumerate(_records(batch, in_columns)):
            for out in fn(r):
                rows.append(_as_record(out, n_out, label))
                sources.append(i)
        cols = _columns_of(rows, out_columns)
        cols[ROW] = np.asarray(sources, dtype=np.int64)
        return cols

    return batch_fn


def output_names(columns: str | Sequence[str], label: str) -> tuple[str, ...]:
    """Output column names given by the user."""
    names = (columns,) if isinstance(columns, str) else tuple(columns)
    if not names or not all(isinstance(c, str) for c in names):
        raise PlanError(f"{label}: columns must be a non-empty list of str, got {columns!r}")
    return names


def function_name(fn: Callable[..., Any]) -> str:
    """A function's qualified name for ``explain()``."""
    return str(getattr(fn, "__qualname__", repr(fn)))
