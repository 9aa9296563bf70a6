"""Logical times at the Python boundary: normalisation, validation and the per-dataflow shape.

A time is a non-negative ``int`` or a tuple of them (ordered as a product: ``a <= b`` iff every
coordinate is ``<=``). Internally every time is a tuple of ``time_dims`` coordinates; a dataflow
fixes ``time_dims`` with the first time it sees (or ``Dataflow(time_dims=k)``) and rejects times
of another shape afterwards. With ``time_dims == 1`` both ``5`` and ``(5,)`` are accepted and
times are shown to the user as plain ints; otherwise they are shown as tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from ddflow.dtypes import INT64_MAX, uint64_as_int64
from ddflow.errors import InvalidValueError, SchemaTypeError, ShapeError, TimeError

__all__ = [
    "Time",
    "Coords",
    "TimeShape",
    "is_int",
    "less_equal",
    "frontier_passed",
]

Time: TypeAlias = int | tuple[int, ...]
"""A user-facing time: an int, or a tuple of ints."""

Coords: TypeAlias = tuple[int, ...]
"""A normalised time: one int per coordinate."""

MAX_TIME_DIMS = 4
"""Coordinates of a time in the engine: outer ``time_dims`` plus one per nested ``iterate``."""


def is_int(value: object) -> bool:
    """Whether ``value`` is an integer (Python or numpy) and not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _coords(time: object, what: str) -> Coords:
    """Converts one time to coordinates, checking types and signs (not the shape)."""
    if is_int(time):
        parts: Sequence[Any] = (time,)
    elif isinstance(time, tuple | list) and len(time) > 0:
        parts = time
    else:
        raise SchemaTypeError(
            f"{what}: a time must be a non-negative int or a non-empty tuple of them, "
            f"got {time!r}"
        )
    out = []
    for p in parts:
        if not is_int(p):
            raise SchemaTypeError(f"{what}: time coordinates must be ints, got {time!r}")
        v = int(p)
        if v < 0 or v > INT64_MAX:
            raise InvalidValueError(
                f"{what}: time coordinates must be non-negative int64 values, got {time!r}"
            )
        out.append(v)
    return tuple(out)


def less_equal(a: Coords, b: Coords) -> bool:
    """The product partial order: every coordinate of ``a`` is ``<=`` that of ``b``."""
    return all(x <= y for x, y in zip(a, b, strict=True))


def frontier_passed(frontier: Sequence[Sequence[int]], time: Coords) -> bool:
    """Whether ``time`` is complete: no element of ``frontier`` is ``<= time``."""
    return not any(less_equal(tuple(f), time) for f in frontier)


class TimeShape:
    """The fixed shape (number of coordinates) of a dataflow's outer times.

    ``dims`` is ``None`` until fixed, either at construction or by the first time seen.
    """

    def __init__(self, dims: int | None = None) -> None:
        """Creates the shape, optionally declared with ``dims`` coordinates."""
        if dims is not None and (not is_int(dims) or not 1 <= dims <= MAX_TIME_DIMS):
            raise InvalidValueError(
                f"time_dims must be an int from 1 to {MAX_TIME_DIMS}, got {dims!r}"
            )
        self.dims: int | None = None if dims is None else int(dims)
        self.max_depth = 0
        """The deepest ``iterate`` nesting of the dataflow (each adds a coordinate)."""

    @property
    def fixed(self) -> bool:
        """Whether the number of coordinates is known."""
        return self.dims is not None

    def fix(self, dims: int) -> None:
        """Fixes the shape to ``dims`` coordinates (no-op if already that shape)."""
        self.check_dims(dims, f"a time with {dims} coordinates")
        self.dims = dims

    def check_dims(self, dims: int, what: str) -> None:
        """Raises if a time of ``dims`` coordinates does not fit the fixed shape."""
        if self.dims is None and dims + self.max_depth > MAX_TIME_DIMS:
            raise InvalidValueError(
                f"{what}: {self._describe(dims)} plus {self.max_depth} nested iterate "
                f"coordinates exceed the engine's {MAX_TIME_DIMS} time coordinates"
            )
        if self.dims is not None and dims != self.dims:
            raise InvalidValueError(
                f"{what}: this dataflow's times have {self._describe(self.dims)}, "
                f"got {self._describe(dims)}"
            )

    @staticmethod
    def _describe(dims: int) -> str:
        return "1 coordinate (int times)" if dims == 1 else f"{dims} coordinates (tuples)"

    def normalize(self, time: object, what: str, *, fix: bool = True) -> Coords:
        """Validates a user time and returns its coordinates; fixes the shape if unset.

        ``what`` names the caller (an input, ``run_until``, ...) in error messages.
        """
        coords = _coords(time, what)
        self.check_dims(len(coords), f"{what}: time {time!r}")
        if fix and self.dims is None:
            self.dims = len(coords)
        return coords

    def zero(self) -> Coords:
        """The least time (all coordinates 0); fixes the shape to int times if unset."""
        if self.dims is None:
            self.dims = 1
        return (0,) * self.dims

    def to_user(self, coords: Sequence[int]) -> Time:
        """Coordinates as the user sees them: an int for 1-D outer times, else a tuple."""
        if len(coords) == 1:
            return int(coords[0])
        return tuple(int(c) for c in coords)

    def array(self, times: object, n: int, what: str) -> npt.NDArray[np.int64]:
        """Times for ``n`` updates as an int64 array of shape (n, dims): C-contiguous, or for
        a scalar time a read-only broadcast of its one row (no memory per update; the engine
        converts the row once).

        ``times`` is a scalar time (broadcast), or an integer array of shape (n,) (1-D times)
        or (n, k). Fixes the shape if unset; checks signs.
        """
        if is_int(times) or isinstance(times, tuple):
            coords = self.normalize(times, what)
            return np.broadcast_to(np.asarray(coords, dtype=np.int64), (n, len(coords)))
        arr = _as_int_array(times, what)
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
        elif arr.ndim != 2 or arr.shape[1] < 1:
            raise InvalidValueError(
                f"{what}: times must have shape (n,) or (n, k), got shape {arr.shape}"
            )
        if arr.shape[0] != n:
            raise ShapeError(f"{what}: {arr.shape[0]} times for {n} updates")
        self.check_dims(arr.shape[1], f"{what}: times of shape {arr.shape}")
        if arr.size and arr.min() < 0:
            bad = arr[np.any(arr < 0, axis=1)][0]
            raise InvalidValueError(
                f"{what}: times must be non-negative, got {self.to_user(bad.tolist())!r}"
            )
        if self.dims is None:
            self.dims = arr.shape[1]
        return np.ascontiguousarray(arr, dtype=np.int64)

    def check_not_before(self, coords: Coords, frontier: Coords, what: str) -> None:
        """Raises ``TimeError`` unless ``coords`` is in the future of ``frontier``."""
        if not less_equal(frontier, coords):
            raise TimeError(
                f"{what}: time {self.to_user(coords)!r} is not in the future of the input's "
                f"frontier {self.to_user(frontier)!r} (set by advance_to)"
            )


def _as_int_array(values: object, what: str) -> npt.NDArray[np.int64]:
    """An integer array from numpy/pyarrow/list input, or ``SchemaTypeError``."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        null_count = getattr(values, "null_count", 0)
        if null_count:
            raise InvalidValueError(f"{what}: times contain {null_count} nulls")
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        raise SchemaTypeError(f"{what}: times must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u":
        return uint64_as_int64(arr, f"{what}: times")
    return arr.astype(np.int64, copy=False)
