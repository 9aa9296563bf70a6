"""Typed aggregate specs: every aggregate the builder writes into a ``reduce`` node is one of
the TypedDicts of ``ddflow.plan`` (exactly its keys), and the engine reads it (the plan's
serde types, ``engine::plan::Agg``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ddflow as dd
from ddflow import aggregates as agg
from ddflow.plan import (
    AGG_KINDS,
    ColumnAgg,
    CountAgg,
    DistinctAgg,
    PythonAgg,
    ThresholdAgg,
    TopKAgg,
)

pytestmark = pytest.mark.timeout(30)


def _total(batch: Any) -> dict[str, np.ndarray]:
    """Per key: the sum of its values' counts (one output row per key)."""
    counts = np.asarray(batch.counts)
    offsets = np.asarray(batch.offsets)
    n = len(offsets) - 1
    totals = np.add.reduceat(counts, offsets[:-1]) if len(counts) else np.zeros(n, np.int64)
    return {"offsets": np.arange(n + 1, dtype=np.int64), "n": totals.astype(np.int64)}


CASES: list[tuple[Callable[[dd.Collection], dd.Collection], type, str]] = [
    (lambda c: c.reduce(by="k", agg=agg.min("v")), ColumnAgg, "min"),
    (lambda c: c.reduce(by="k", agg=agg.max("v")), ColumnAgg, "max"),
    (lambda c: c.reduce(by="k", agg=agg.sum("v")), ColumnAgg, "sum"),
    (lambda c: c.reduce(by="k", agg=agg.count()), CountAgg, "count"),
    (lambda c: c.reduce(by="k", agg=agg.distinct()), DistinctAgg, "distinct"),
    (lambda c: c.reduce(by="k", agg=agg.top_k("v", 1, descending=True)), TopKAgg, "top_k"),
    (lambda c: c.threshold(lambda n: min(n, 1)), ThresholdAgg, "threshold_py"),
    (lambda c: c.reduce(by="k", agg=_total, columns=("n",)), PythonAgg, "python"),
]


@pytest.mark.parametrize(("build", "spec", "kind"), CASES, ids=[k for _, _, k in CASES])
def test_builder_writes_the_typed_spec_and_the_engine_reads_it(
    build: Callable[[dd.Collection], dd.Collection], spec: type, kind: str
) -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(("k", "v"))
    out = build(c)
    cap = out.capture()
    reduces = [n for n in flow._plan.nodes if n["op"] == "reduce"]
    assert reduces, "a reduce node"
    written = reduces[-1]["agg"]
    assert written["kind"] == kind
    assert AGG_KINDS[kind] is spec
    assert set(written) == set(spec.__annotations__), written
    inp.update_batch({"k": np.array([1, 1, 2]), "v": np.array([5, 7, 9])}, times=0)
    inp.close()
    flow.run()  # the engine parsed the plan, this aggregate included
    assert cap.updates().num_rows > 0
