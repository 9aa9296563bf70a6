"""Connectors: sources that feed a dataflow's inputs while ``flow.run()`` runs, and sinks.

One module per system, each with ``read(flow, ..., schema=None) -> Collection`` and
``write(collection, ...)``:

* :mod:`ddflow.io.csv`, :mod:`ddflow.io.jsonlines`, :mod:`ddflow.io.parquet`: a file or a
  directory of files (``watch=True`` follows new files); the sinks write a collection's
  updates into files named by the range of completed times they hold
  (:mod:`ddflow.io.filesink`).
* :mod:`ddflow.io.postgres`: a table followed through logical replication, and a table kept
  equal to a collection by primary key (psycopg 3, the extra ``ddflow[postgres]``).
* :mod:`ddflow.io.deltalake`: a Delta table's versions followed, and a Delta table written
  with a collection's updates or kept equal to it by primary key (the extra
  ``ddflow[deltalake]``).
* :func:`subscribe`: Python callbacks on a collection's completed updates.

Shared pieces: :mod:`~ddflow.io.files` (which files, each once), :mod:`~ddflow.io.conform`
(schemas, and rows made to fit them), :mod:`~ddflow.io.filesource` (reading files as a
:class:`~ddflow.sources.Source`), :mod:`~ddflow.io.filesink`, :mod:`~ddflow.io.jsontext`.
The run loop that drives sources is :mod:`ddflow.runloop`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ddflow.io.subscribe import subscribe
from ddflow.sources import RowError, Source, SourceBatch, SourceError

if TYPE_CHECKING:
    from ddflow.io import csv, deltalake, jsonlines, parquet, postgres
    from ddflow.io.filesink import FileSink

_LAZY = {
    "csv": "ddflow.io.csv",
    "jsonlines": "ddflow.io.jsonlines",
    "parquet": "ddflow.io.parquet",
    "postgres": "ddflow.io.postgres",
    "deltalake": "ddflow.io.deltalake",
    "FileSink": "ddflow.io.filesink",
}
"""Connectors imported when first used: their readers (pyarrow's CSV, JSON and Parquet
modules, with pyarrow's file systems, and psycopg) double the memory of ``import ddflow``."""


def __getattr__(name: str) -> Any:
    """A connector module (or ``FileSink``), imported on first use."""
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'ddflow.io' has no attribute {name!r}")
    module = importlib.import_module(target)
    value = getattr(module, name) if name == "FileSink" else module
    globals()[name] = value
    return value


__all__ = [
    "csv",
    "jsonlines",
    "parquet",
    "postgres",
    "deltalake",
    "subscribe",
    "FileSink",
    "Source",
    "SourceBatch",
    "SourceError",
    "RowError",
]
