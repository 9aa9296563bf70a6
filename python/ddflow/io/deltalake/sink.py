"""The Delta Lake sink: a collection's updates appended to a Delta table, or the table kept
equal to the collection by primary key.

The sink captures the collection (``errors="collect"``: error updates stay in
``flow.errors()``) and writes what the dataflow completes:

* **without a key**, the updates themselves (record columns, ``time``, ``diff``,
  consolidated, sorted by time): one append commit per range of completed times that holds
  updates, as the file sinks write one file (:mod:`ddflow.io.filesink`). The commit's
  metadata holds the range, ``ddflow.lower`` and ``ddflow.upper``: every update at a time
  before the greatest ``ddflow.upper`` is in the table;
* **with** ``primary_key=``, the collection's current rows: one ``MERGE`` commit per
  completed time, in time order, that upserts the last row entering per key and deletes the
  keys whose count dropped to zero (:class:`~ddflow.io.keyed.KeyedState`, shared with the
  Postgres sink). A reader of any version sees the collection at a completed time (the
  commit's ``ddflow.time``), never half of one.

The table is created where it is missing, with the collection's columns (and ``time``,
``diff`` without a key). Delivery is *at least once*, as for the Postgres sink: a run that
stops between completing a time and committing it writes nothing of it. In a persistent
dataflow (``dd.Dataflow(persistence=...)``) it is *exactly once*: each commit's metadata is
the sink's position, so a restarted dataflow, which replays its inputs, writes on after the
last commit (a keyed sink rebuilds its per-key counts from the replay).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, write_deltalake

from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError, SchemaTypeError
from ddflow.io.filesink import END
from ddflow.io.keyed import KeyedState

__all__ = ["DeltaSink"]

_DELETE = "__ddflow_delete"
"""The merge source's column telling a key to delete from a row to upsert."""


class DeltaSink:
    """Writes a collection's completed updates (or, by key, its current rows) to a Delta
    table."""

    def __init__(
        self,
        collection: Collection,
        uri: str | os.PathLike[str],
        primary_key: list[str] | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        flow = collection.flow
        if not isinstance(flow, Dataflow):
            raise PlanError(f"deltalake.write: expected a Collection, got {collection!r}")
        if primary_key is not None:
            if not primary_key:
                raise PlanError("deltalake.write: primary_key names no column")
            unknown = [k for k in primary_key if k not in collection.columns]
            if unknown:
                raise PlanError(
                    f"deltalake.write: primary key columns {unknown} are not columns of "
                    f"{list(collection.columns)}"
                )
        flow.time_shape.fix(1)
        self.uri = os.fspath(uri)
        self.columns = list(collection.columns)
        self.primary_key = primary_key
        self.storage_options = storage_options
        self.keyed = None if primary_key is None else KeyedState(primary_key, self.columns)
        self.capture: Capture = collection.capture(errors="collect", keep="state")
        self.capture.subscribe(self._take)
        self.lower: int | None = 0
        """The first time not written yet (None once the collection is complete)."""
        self.commits = 0
        """Delta commits made so far."""
        self._pending: list[pa.Table] = []
        self._table: DeltaTable | None = None
        self.flow = flow
        self.position = 0
        """Every update (keyed: every time) before it is in the table: read from the
        table's commits in a persistent dataflow, so that a restart writes on from there."""
        if flow.persistence is not None and DeltaTable.is_deltatable(
            self.uri, self.storage_options
        ):
            self._table = self._open()
            upper = _committed(self._table, keyed=self.keyed is not None)
            if upper == END:
                self.lower = None
            else:
                self.position = upper
                if self.keyed is None:
                    self.lower = upper
        flow.on_progress(self._progress)

    def _take(self, updates: pa.Table) -> None:
        floor = max(self.position, self.flow.resumed_since)
        if floor > 0 and self.keyed is None:  # a restart replays what was written: skip it
            updates = updates.filter(pc.greater_equal(updates["time"], floor))
        if updates.num_rows:
            self._pending.append(updates)

    def _progress(self, final: bool) -> None:
        """Writes what completed since the last call; at the end of a run, creates the table
        if nothing was written."""
        if self.lower is None:
            return
        frontier = self.capture.frontier()
        upper = END if not frontier else int(frontier[0])  # type: ignore[arg-type]
        try:
            if self._pending and upper > self.lower:
                updates = pa.concat_tables(self._pending)
                self._pending = []
                self._check_types(updates.schema)
                if self.keyed is None:
                    self._append(updates, self.lower, upper)
                else:
                    self._merge(updates)
                self.lower = None if upper == END else upper
            if final and self._table is None:
                empty = self._empty()
                self._check_types(empty.schema)
                self._create(empty)
        except SchemaTypeError:
            raise
        except Exception as exc:  # delta-rs reports most failures as a bare Exception
            exc.add_note(f"ddflow: deltalake.write({self.uri!r}) failed writing to the table")
            raise

    def _check_types(self, schema: pa.Schema) -> None:
        """Refuses the columns Delta Lake cannot hold (durations), naming them."""
        for f in schema:
            if pa.types.is_duration(f.type):
                raise SchemaTypeError(
                    f"deltalake.write({self.uri!r}): column {f.name!r} is {f.type}, which "
                    "Delta Lake cannot hold; cast it first (for example to int64)"
                )

    def _append(self, updates: pa.Table, lower: int, upper: int) -> None:
        """One append commit holding the updates at times ``lower <= t < upper``."""
        metadata = {"ddflow.lower": str(lower), "ddflow.upper": str(upper)}
        write_deltalake(
            self.uri,
            updates,
            mode="append",
            storage_options=self.storage_options,
            commit_properties=CommitProperties(custom_metadata=metadata),
        )
        self.commits += 1
        self._table = self._open()

    def _merge(self, updates: pa.Table) -> None:
        """One ``MERGE`` commit per completed time, in time order."""
        assert self.keyed is not None and self.primary_key is not None
        if self._table is None:
            self._create(updates.select(self.columns).schema.empty_table())
        table = self._table
        assert table is not None
        predicate = " AND ".join(
            f"t.{_ident(k)} IS NOT DISTINCT FROM s.{_ident(k)}" for k in self.primary_key
        )
        floor = max(self.position, self.flow.resumed_since)
        for t in sorted(pc.unique(updates["time"]).to_pylist()):
            part = updates.filter(pc.equal(updates["time"], t))
            upserts, deletes = self.keyed.apply(part)
            if t < floor:
                continue  # replayed after a restart: written before it (the counts are kept)
            if upserts.num_rows == 0 and deletes.num_rows == 0:
                continue
            source = _merge_source(upserts, deletes, self.columns)
            metadata = {"ddflow.time": str(t)}
            (
                table.merge(
                    source,
                    predicate,
                    source_alias="s",
                    target_alias="t",
                    commit_properties=CommitProperties(custom_metadata=metadata),
                )
                .when_matched_delete(predicate=f"s.{_DELETE}")
                .when_matched_update_all(predicate=f"NOT s.{_DELETE}", except_cols=[_DELETE])
                .when_not_matched_insert_all(predicate=f"NOT s.{_DELETE}", except_cols=[_DELETE])
                .execute()
            )
            self.commits += 1

    def _create(self, empty: pa.Table) -> None:
        """Creates the table where missing (an empty commit with the sink's columns)."""
        if not DeltaTable.is_deltatable(self.uri, self.storage_options):
            write_deltalake(self.uri, empty, mode="ignore", storage_options=self.storage_options)
        self._table = self._open()

    def _open(self) -> DeltaTable:
        return DeltaTable(self.uri, storage_options=self.storage_options)

    def _empty(self) -> pa.Table:
        """An empty table of the sink's columns (record columns, and ``time``, ``diff``
        without a key)."""
        state = self.capture.state().schema
        fields = [state.field(i) for i in range(len(state) - 1)]
        if self.keyed is None:
            fields += [pa.field("time", pa.int64()), state.field("diff")]
        return pa.schema(fields).empty_table()


def _committed(table: DeltaTable, keyed: bool) -> int:
    """The position a sink's commits record: the greatest ``ddflow.upper`` of its appends,
    or one past the greatest ``ddflow.time`` of its merges (0 when there is none)."""
    key = "ddflow.time" if keyed else "ddflow.upper"
    values = [int(h[key]) for h in table.history() if key in h]
    if not values:
        return 0
    return max(values) + 1 if keyed else max(values)


def _merge_source(upserts: pa.Table, deletes: pa.Table, columns: list[str]) -> pa.Table:
    """The rows to upsert and the keys to delete as one table, told apart by ``_DELETE``."""
    rows = upserts.append_column(_DELETE, pa.array([False] * upserts.num_rows, pa.bool_()))
    gone_columns: dict[str, Any] = {}
    for name in columns:
        field = upserts.schema.field(name)
        if name in deletes.column_names:
            gone_columns[name] = deletes[name].cast(field.type)
        else:
            gone_columns[name] = pa.nulls(deletes.num_rows, field.type)
    gone_columns[_DELETE] = pa.array([True] * deletes.num_rows, pa.bool_())
    gone = pa.table(gone_columns, schema=rows.schema)
    return pa.concat_tables([rows, gone])


def _ident(name: str) -> str:
    """A column name quoted for a Delta predicate."""
    return "`" + name.replace("`", "``") + "`"
