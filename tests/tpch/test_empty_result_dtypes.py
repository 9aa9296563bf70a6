"""An empty result's dtypes, as TPC-H Q17 at SF 0.01 meets them: a declared column passed
through keeps its dtype, and so does a computed one (a global ``sum`` then ``/``), typed off
the plan (``ddflow.plan_dtypes``) before any row exists.
"""

from __future__ import annotations

import decimal

import pyarrow as pa

import ddflow as dd

D = decimal.Decimal


def test_an_empty_capture_reports_the_dtype_of_a_computed_decimal() -> None:
    schema = pa.schema([("k", pa.int64()), ("p", pa.decimal128(15, 2))])
    flow = dd.Dataflow()
    inp, c = flow.new_input(schema)
    kept = c.filter(dd.col("k") > 5)
    passed = kept.select("p").capture()
    total = kept.group_by().agg(s=dd.sum("p")).select(r=dd.col("s") / dd.lit(D("7.0")))
    computed = total.capture()
    inp.update_batch(pa.table({"k": [1], "p": pa.array([D("1.00")], schema[1].type)}), times=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert passed.at(0).schema.field("p").type == pa.decimal128(15, 2)
    assert computed.at(0).schema.field("r").type == pa.decimal128(38, 6)
