"""A persistent dataflow over a Delta table, into a Delta sink of updates and a keyed Delta
sink: a restart after new versions (appends, a delete) reads only the versions since its
offset, and both sinks end equal to a recompute from the table's final state, each update
and each key written once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from tests.io.deltalake.helpers import accumulate, multiset, table_at

import ddflow as dd

pytestmark = pytest.mark.timeout(120)


def _flow(src: str, out: Path, state: Path) -> tuple[dd.Dataflow, dd.Capture]:
    flow = dd.Dataflow(persistence=dd.Persistence(state, interval="1h"))
    rows = dd.io.deltalake.read(flow, src, schema={"k": "str", "x": "int64"})
    totals = rows.group_by("k").agg(s=dd.sum("x"), n=dd.count())
    dd.io.deltalake.write(totals, str(out / "updates"))
    dd.io.deltalake.write(totals, str(out / "keyed"), primary_key=["k"])
    return flow, rows.capture()


def _expected(src: str) -> Counter[tuple[object, ...]]:
    table = DeltaTable(src).to_pyarrow_table()
    grouped = table.group_by("k").aggregate([("x", "sum"), ("x", "count")])
    return Counter({(r["k"], r["x_sum"], r["x_count"]): 1 for r in grouped.to_pylist()})


def test_a_restart_reads_the_new_versions_once(tmp_path: Path) -> None:
    src, out, state = str(tmp_path / "src"), tmp_path / "out", tmp_path / "state"
    write_deltalake(src, pa.table({"k": ["a", "b", "a"], "x": [1, 2, 3]}))
    flow, _ = _flow(src, out, state)
    flow.run(progress=False)
    assert accumulate(table_at(str(out / "updates")), ["k", "s", "n"]) == _expected(src)

    write_deltalake(src, pa.table({"k": ["c", "a"], "x": [4, 5]}), mode="append")
    DeltaTable(src).delete("k = 'b'")
    write_deltalake(src, pa.table({"k": ["b"], "x": [7]}), mode="append")
    flow, rows = _flow(src, out, state)
    flow.run(progress=False)
    # Only the three new versions were read, each once (the snapshot was not read again).
    source = flow._loop.attached[0].source
    assert source.offset()["version"] == DeltaTable(src).version()
    assert accumulate(table_at(str(out / "updates")), ["k", "s", "n"]) == _expected(src)
    assert multiset(table_at(str(out / "keyed")), ["k", "s", "n"]) == _expected(src)
    assert multiset(rows.state(), ["k", "x"]) == multiset(
        DeltaTable(src).to_pyarrow_table(), ["k", "x"]
    )

    flow, _ = _flow(src, out, state)  # nothing new: nothing written
    commits = len(DeltaTable(str(out / "updates")).history())
    flow.run(progress=False)
    assert len(DeltaTable(str(out / "updates")).history()) == commits
    assert accumulate(table_at(str(out / "updates")), ["k", "s", "n"]) == _expected(src)
