"""Exception classes raised by ddflow.

Every error ddflow raises for bad input derives from :class:`DdflowError`; each subclass also
derives from the builtin exception a Python user would expect (``ValueError``, ``TypeError``,
...), so ``except ValueError`` keeps working. The native module maps each core error variant
to one class here (``rust/ddflow-py/src/errors.rs``) and sets ``operator`` when the error
names one.
"""

from __future__ import annotations

__all__ = [
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
    "PersistenceError",
    "CorruptCheckpointError",
]

import builtins
from typing import Any


class DdflowError(Exception):
    """Root of all ddflow errors.

    ``operator``: the label of the operator (or capture) that raised it, where known.
    """

    operator: str | None = None


class ShapeError(DdflowError, ValueError):
    """Columns or arrays whose lengths or shapes disagree."""


class SchemaTypeError(DdflowError, TypeError):
    """A value of an unsupported or unexpected type (dtype, record arity, schema)."""


class InvalidValueError(DdflowError, ValueError):
    """A value outside the accepted range (negative time, wrong time dimension, ...)."""


class UnsortedInputError(DdflowError, ValueError):
    """Input that must be sorted is not."""


class OverflowError(DdflowError, builtins.OverflowError):  # noqa: A001
    """A 64-bit difference or arithmetic result overflowed."""


class TimeError(DdflowError, ValueError):
    """A time that is not in the future of the relevant frontier."""


class ColumnNotFoundError(DdflowError, KeyError):
    """A column name that does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


class PlanError(DdflowError, ValueError):
    """An invalid dataflow definition."""


class DivisionByZeroError(DdflowError, ZeroDivisionError):
    """Division or modulo by zero in an expression."""


class UserFunctionError(DdflowError, ValueError):
    """A user function returned something of the wrong shape or type."""


class InternalError(DdflowError, RuntimeError):
    """A bug in ddflow (a Rust panic caught at the boundary)."""


class SpillError(DdflowError, OSError):
    """A spill file could not be written or mapped, or failed its checks (magic, lengths,
    checksum). Spill files hold cold trace batches on disk under a ``memory_limit``; the
    message names the file.
    """


class MemoryLimitError(DdflowError, MemoryError):
    """The bytes live in ddflow's heap passed the dataflow's ``memory_limit``: the run
    stopped before the allocator could fail (which would abort the process).

    The message names the operator that was running, the live bytes, the limit and the
    largest arrangements (updates and bytes). The dataflow cannot continue (an operator may
    have stopped partway through a batch): later runs raise this error again; its inputs,
    captures and the dataflow itself can still be read and dropped.
    """


class ReentrancyError(DdflowError, RuntimeError):
    """A callback (user function, subscriber) called back into the dataflow running it."""


class DataError(DdflowError, ValueError):
    """An output was read at a time where an error update is live.

    Records that make an expression or a user function fail, and accumulations that
    overflow, become error updates (operator, message, values) at the record's time with its
    diff; they flow to every output downstream and retract like data. ``errors`` holds the
    first live errors as dicts (``operator``, ``message``, ``values``, ``time``, ``diff``).
    """

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.errors: list[dict[str, Any]] = list(errors or [])


class PersistenceError(DdflowError, RuntimeError):
    """A persistent dataflow cannot start from, or write, its checkpoint directory: another
    plan wrote it, its format version is not this release's, or a part of the dataflow cannot
    be persisted (the message names which)."""


class CorruptCheckpointError(PersistenceError):
    """A checkpoint file is truncated or its checksum does not match (the message names the
    file); it is never loaded."""
