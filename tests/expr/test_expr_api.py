"""The Python expression builder (operators, repr, JSON, names) and ``_core.eval_expr``
plumbing (column conversions, shapes, dtypes, errors)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddflow import _core
from ddflow.errors import (
    ColumnNotFoundError,
    InvalidValueError,
    OverflowError,
    PlanError,
    SchemaTypeError,
    ShapeError,
)
from ddflow.expr import Expr, col, lit, max_of, min_of, when


def ev(e: Expr, length: int | None = None, **columns: Any) -> np.ndarray:
    return _core.eval_expr(json.dumps(e.to_json()), columns, length)


# -- builder -------------------------------------------------------------------------------


def test_repr_and_json_shapes() -> None:
    e = (col("dist") + 1).alias("d")
    assert repr(e) == '(col("dist") + 1).alias("d")'
    assert e.to_json() == {
        "op": "alias",
        "name": "d",
        "arg": {
            "op": "add",
            "args": [{"op": "col", "name": "dist"}, {"op": "lit", "value": 1, "dtype": "int64"}],
        },
    }
    w = when(col("a") > 0.5).then("x").otherwise(col("s"))
    assert repr(w) == 'when((col("a") > 0.5)).then("x").otherwise(col("s"))'
    assert w.to_json()["op"] == "when"
    assert repr(lit(3).cast(float)) == 'lit(3).cast("float64")'
    assert repr(~col("p") & True) == '((~col("p")) & True)'
    assert repr(min_of(-col("a"), 2.0)) == 'min_of((-col("a")), 2.0)'
    assert repr(1 - col("a")) == '(1 - col("a"))'
    assert repr(2 // col("a") % 3) == '((2 // col("a")) % 3)'
    assert repr(col("a") / 2) == '(col("a") / 2)'


def test_chains_flatten_in_json() -> None:
    total = col("c0")
    for i in range(1, 200):
        total = total + col(f"c{i}")
    j = total.to_json()
    assert j["op"] == "add" and len(j["args"]) == 200
    cols = {f"c{i}": np.full(3, i) for i in range(200)}
    np.testing.assert_array_equal(ev(total, **cols), np.full(3, sum(range(200))))
    assert _core.expr_repr(json.dumps(j)) == repr(total)
    mixed = (col("a") - 1 - 2) * 3 - 4
    assert mixed.to_json()["args"][0]["args"][0]["args"][0]["op"] == "col"
    assert _core.expr_repr(json.dumps(mixed.to_json())) == repr(mixed)
    three = min_of(col("a"), 5, col("b"))
    assert repr(three) == 'min_of(min_of(col("a"), 5), col("b"))'
    assert len(three.to_json()["args"]) == 3
    a, b = np.array([1, 9, 7]), np.array([3, 2, 8])
    np.testing.assert_array_equal(ev(three, a=a, b=b), [1, 2, 5])
    np.testing.assert_array_equal(ev(max_of(col("a"), col("b"), 7.5), a=a, b=b), [7.5, 9, 8])


def test_reflected_operators_and_numpy_scalars() -> None:
    a = np.array([1, 2, 3])
    np.testing.assert_array_equal(ev(10 - col("a"), a=a), 10 - a)
    np.testing.assert_array_equal(ev(np.int64(10) - col("a"), a=a), 10 - a)
    np.testing.assert_array_equal(ev(np.float64(0.5) * col("a"), a=a), 0.5 * a)
    np.testing.assert_array_equal(ev(col("a") < np.int32(2), a=a), a < 2)
    np.testing.assert_array_equal(ev(np.True_ & (col("a") > 1), a=a), a > 1)
    assert isinstance(np.int64(1) + col("a"), Expr)


def test_bool_is_an_error() -> None:
    with pytest.raises(TypeError, match=r"use & \| ~"):
        bool(col("a") > 1)
    with pytest.raises(TypeError):
        if col("a") == 1:
            pass
    with pytest.raises(TypeError):
        _ = 0 < col("a") < 5
    with pytest.raises(TypeError):
        _ = col("a") > 1 and col("b") > 1
    with pytest.raises(TypeError):
        hash(col("a"))


def test_names_and_columns() -> None:
    e = lit(1) + col("b") * col("a") + col("b")
    assert e.output_name() == "b"
    assert e.columns() == ["b", "a"]
    assert (lit(1) + lit(2)).output_name() == "literal"
    assert (col("a") + 1).alias("z").output_name() == "z"
    assert when(col("p")).then(col("x")).otherwise(0).output_name() == "p"
    for x in (e, (col("a") * 2).alias("q"), lit(5), when(col("c")).then(1).otherwise(col("d"))):
        assert _core.expr_output_name(json.dumps(x.to_json())) == x.output_name()


def test_literals() -> None:
    assert lit(True).to_json()["dtype"] == "bool"
    assert lit(np.bool_(False)).to_json() == {"op": "lit", "value": False, "dtype": "bool"}
    assert lit(3, "float64").to_json() == {"op": "lit", "value": 3.0, "dtype": "float64"}
    assert lit(np.int32(3)).to_json() == {"op": "lit", "value": 3, "dtype": "int64"}
    assert lit(float("inf")).to_json()["value"] == "inf"
    assert lit(float("nan")).to_json()["value"] == "nan"
    assert repr(lit(float("-inf"))) == "-inf"
    assert lit(0.1).to_json()["value"] == 0.1
    assert lit(380166.44986778003).to_json()["value"] == "380166.44986778003"
    with pytest.raises(OverflowError):
        lit(2**63)
    with pytest.raises(SchemaTypeError):
        lit(1.5, "int64")
    with pytest.raises(SchemaTypeError):
        lit("x", "int64")
    with pytest.raises(SchemaTypeError):
        lit([1, 2])  # type: ignore[arg-type]
    with pytest.raises(SchemaTypeError):
        col("a") + None  # type: ignore[operator]
    with pytest.raises(SchemaTypeError):
        col("a").cast("complex128")
    assert col("a").cast(np.float64).to_json()["dtype"] == "float64"
    assert col("a").cast("int").to_json()["dtype"] == "int64"


def test_incomplete_when_is_rejected() -> None:
    with pytest.raises(SchemaTypeError, match="otherwise"):
        col("a") + when(col("p")).then(1)  # type: ignore[operator]
    with pytest.raises(TypeError):
        bool(when(col("p")))


@settings(max_examples=300, deadline=None)
@given(
    st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**63), 2**63 - 1),
)
def test_literals_reach_rust_exactly(v: float | int) -> None:
    got = ev(lit(v) + 0, length=1)
    want = np.array([v])
    if isinstance(v, float) and math.isnan(v):
        assert np.isnan(got[0])
    else:
        assert got[0] == want[0] and got.dtype == want.dtype
    assert _core.expr_repr(json.dumps(lit(v).to_json())) == repr(lit(v))


# Random expression trees: Python's repr equals Rust's Display; JSON round-trips.

leaves = st.one_of(
    st.sampled_from(["a", "b", "long name", 'q"uote', "ünï\ncode"]).map(col),
    st.integers(-(2**63), 2**63 - 1).map(lit),
    st.floats(allow_nan=True, allow_infinity=True).map(lit),
    st.booleans().map(lit),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=5).map(lit),
)


def _extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    binops = [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a * b,
        lambda a, b: a / b,
        lambda a, b: a // b,
        lambda a, b: a % b,
        lambda a, b: a == b,
        lambda a, b: a != b,
        lambda a, b: a < b,
        lambda a, b: a <= b,
        lambda a, b: a > b,
        lambda a, b: a >= b,
        lambda a, b: a & b,
        lambda a, b: a | b,
        min_of,
        max_of,
    ]
    return st.one_of(
        st.tuples(st.sampled_from(binops), children, children).map(lambda t: t[0](t[1], t[2])),
        children.map(lambda a: -a),
        children.map(lambda a: ~a),
        st.tuples(children, st.sampled_from(["int64", "float64", "bool", "str"])).map(
            lambda t: t[0].cast(t[1])
        ),
        st.tuples(children, st.text(st.characters(exclude_categories=("Cs",)), max_size=4)).map(
            lambda t: t[0].alias(t[1])
        ),
        st.tuples(children, children, children).map(
            lambda t: when(t[0]).then(t[1]).otherwise(t[2])
        ),
    )


trees = st.recursive(leaves, _extend, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(trees)
def test_repr_matches_rust_display(e: Expr) -> None:
    text = json.dumps(e.to_json())
    assert _core.expr_repr(text) == repr(e)
    assert _core.expr_output_name(text) == e.output_name()


# -- eval_expr plumbing --------------------------------------------------------------------


def test_column_conversions() -> None:
    a32 = np.array([1, -2, 3], dtype=np.int32)
    u8 = np.array([1, 2, 250], dtype=np.uint8)
    f32 = np.array([0.5, 1.5, -2.0], dtype=np.float32)
    out = ev(col("a") + col("u") + col("f"), a=a32, u=u8, f=f32)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [2.5, 1.5, 251.0])
    strided = np.arange(10)[::2]
    np.testing.assert_array_equal(ev(col("s") * 2, s=strided), strided * 2)
    np.testing.assert_array_equal(ev(col("l") + 1, l=[1, 2, 3]), [2, 3, 4])
    s = ev(col("s"), s=np.array(["x", "yy"]))
    assert s.dtype == object and list(s) == ["x", "yy"]
    # uint64 is read as int64 where every value fits (the bindings' one uint64 policy).
    np.testing.assert_array_equal(ev(col("u") + 1, u=np.array([1, 2**63 - 2], dtype=np.uint64)),
                                  [2, 2**63 - 1])  # fmt: skip
    with pytest.raises(OverflowError, match=r"value 9223372036854775808 at row 1 .*int64"):
        ev(col("u"), u=np.array([0, 2**63], dtype=np.uint64))
    with pytest.raises(SchemaTypeError, match="row 1"):
        ev(col("s") == "x", s=np.array(["x", None], dtype=object))
    with pytest.raises(SchemaTypeError):
        ev(col("c"), c=np.array([1j]))


def test_shapes_and_lengths() -> None:
    with pytest.raises(ShapeError, match='"b"'):
        ev(col("a") + col("b"), a=np.arange(3), b=np.arange(4))
    with pytest.raises(ShapeError):
        ev(col("a"), a=np.zeros((2, 2)))
    np.testing.assert_array_equal(ev(lit(7), length=3), [7, 7, 7])
    np.testing.assert_array_equal(ev(lit(7), a=np.arange(2)), [7, 7])
    assert ev(lit(1) // 0).shape == (0,)  # no rows: nothing fails
    assert ev(col("a") // 0, a=np.zeros(0, dtype=np.int64)).dtype == np.int64
    with pytest.raises(ShapeError):
        ev(col("a"), length=5, a=np.arange(3))


def test_unreferenced_columns_are_not_converted() -> None:
    # An unreferenced object column holding None is fine; only its dtype is read.
    out = ev(col("a") + 1, a=np.arange(2), junk=np.array([None, 1], dtype=object))
    np.testing.assert_array_equal(out, [1, 2])


def test_malformed_json_is_a_plan_error() -> None:
    with pytest.raises(PlanError):
        _core.eval_expr('{"op": "frobnicate"}', {})
    with pytest.raises(PlanError):
        _core.eval_expr("{not json", {})
    with pytest.raises(ColumnNotFoundError):
        _core.eval_expr('{"op": "col", "name": "zz"}', {"a": np.arange(1)})


def test_expr_dtype() -> None:
    schema = [("i", "int64"), ("x", "float64"), ("p", "bool"), ("s", "str")]

    def dt(e: Expr) -> str:
        return _core.expr_dtype(json.dumps(e.to_json()), schema)

    assert dt(col("i") + 1) == "int64"
    assert dt(col("i") + col("x")) == "float64"
    assert dt(col("i") / 2) == "float64"
    assert dt(col("s") == "a") == "bool"
    assert dt(when(col("p")).then(col("s")).otherwise("z")) == "str"
    assert dt(when(col("p")).then(1).otherwise(2.5)) == "float64"
    assert dt(max_of(col("p"), False)) == "bool"
    assert dt(col("x").cast("int64").alias("k")) == "int64"


def test_a_null_the_evaluator_cannot_carry_is_refused_not_dropped() -> None:
    """Columns evaluated outside a dataflow have no null flags: a null literal or a lax cast
    that makes a null is an error naming the expression and row, never a silent value."""
    x = np.array([1, 2], dtype=np.int64)
    with pytest.raises(InvalidValueError, match="is null at row 0"):
        ev(lit(None, "int64") + col("x"), x=x)
    s = np.array(["7", "x"], dtype=object)
    with pytest.raises(InvalidValueError, match="is null at row 1"):
        ev(col("s").cast("int64", strict=False), s=s)
    assert ev(col("s").cast("int64", strict=False), s=s[:1]).tolist() == [7]
