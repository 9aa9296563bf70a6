"""Ordering comparisons of ``str`` columns and literals (``<``, ``<=``, ``>``, ``>=``,
``is_between``) follow code point order, as Python's and SQL's (DuckDB's) do, with nulls
giving null; checked on random strings against Python."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import ddflow as dd

TEXT = st.text(alphabet=st.sampled_from(["a", "b", "B", "é", "z", "🙂", " ", "\x00"]), max_size=4)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.none(), TEXT), min_size=1, max_size=30), TEXT, TEXT)
def test_string_comparisons_follow_code_point_order(
    values: list[str | None], lo: str, hi: str
) -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input({"s": "str", "t": "str", "i": "int64"})
    out = c.select(
        "i",
        lt=dd.col("s") < lo,
        le=dd.col("s") <= dd.col("t"),
        gt=dd.col("s") > dd.lit(hi),
        between=dd.col("s").is_between(lo, hi),
    ).capture()
    others = list(reversed(values))
    inp.update_batch(
        pa.table(
            {
                "s": pa.array(values, pa.string()),
                "t": pa.array(others, pa.string()),
                "i": list(range(len(values))),
            }
        ),
        times=0,
    )
    inp.advance_to(1)
    flow.run_until(1)
    got = {r["i"]: (r["lt"], r["le"], r["gt"], r["between"]) for r in out.at(0).to_pylist()}
    for i, (s, t) in enumerate(zip(values, others, strict=True)):
        want = (
            None if s is None else s < lo,
            None if s is None or t is None else s <= t,
            None if s is None else s > hi,
            None if s is None else lo <= s <= hi,
        )
        assert got[i] == want, (s, t, lo, hi)
