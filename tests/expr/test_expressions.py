"""Expression operators evaluated in Rust agree with numpy (and with exact Python integer
arithmetic near the int64 bounds, where ddflow raises instead of wrapping)."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ddflow import _core
from ddflow.errors import (
    ColumnNotFoundError,
    DivisionByZeroError,
    InvalidValueError,
    OverflowError,
    SchemaTypeError,
)
from ddflow.expr import Expr, col, lit, max_of, min_of, when

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
N = 1000


def ev(e: Expr, **columns: Any) -> np.ndarray:
    """Evaluates ``e`` in Rust on numpy columns."""
    return _core.eval_expr(json.dumps(e.to_json()), columns)


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype and values (NaN equals NaN, -0.0 equals 0.0)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20241123)


def small_ints(rng: np.random.Generator, lo: int = -1000, hi: int = 1000) -> np.ndarray:
    return rng.integers(lo, hi, N, dtype=np.int64)


def floats(rng: np.random.Generator) -> np.ndarray:
    """Random floats with zeros, signed zeros, infinities and NaNs mixed in."""
    x = rng.normal(0, 100, N)
    integral = rng.random(N) < 0.2
    x[integral] = rng.integers(-5, 5, int(integral.sum()))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5])
    idx = rng.random(N) < 0.15
    x[idx] = rng.choice(special, int(idx.sum()))
    x[rng.random(N) < 0.1] = 3.0  # equal values for comparisons
    return x


def bools(rng: np.random.Generator) -> np.ndarray:
    return rng.random(N) < 0.5


ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}
CMP: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@pytest.mark.parametrize("op", list(ARITH))
def test_int_arithmetic_matches_numpy(rng: np.random.Generator, op: str) -> None:
    a, b = small_ints(rng), small_ints(rng)
    b[b == 0] = 7
    f = ARITH[op]
    assert_same(ev(f(col("a"), col("b")), a=a, b=b), f(a, b))
    assert_same(ev(f(col("a"), 3), a=a), f(a, np.int64(3)))
    assert_same(ev(f(-3, col("b")), b=b), f(np.int64(-3), b))


@pytest.mark.parametrize("op", [*ARITH, "/"])
def test_float_arithmetic_matches_numpy(rng: np.random.Generator, op: str) -> None:
    a, b = floats(rng), floats(rng)
    f = ARITH.get(op, operator.truediv)
    with np.errstate(all="ignore"):
        want = f(a, b)
        want_lit = f(a, np.float64(-2.5))
    assert_same(ev(f(col("a"), col("b")), a=a, b=b), want)
    assert_same(ev(f(col("a"), -2.5), a=a), want_lit)


@pytest.mark.parametrize("op", [*ARITH, "/"])
def test_mixed_int_float_promotes_like_numpy(rng: np.random.Generator, op: str) -> None:
    a, b = small_ints(rng), floats(rng)
    f = ARITH.get(op, operator.truediv)
    with np.errstate(all="ignore"):
        want = f(a, b)
        want_rev = f(b, a)
        want_lit = f(a, np.float64(0.75))
    assert_same(ev(f(col("a"), col("b")), a=a, b=b), want)
    assert_same(ev(f(col("b"), col("a")), a=a, b=b), want_rev)
    assert_same(ev(f(col("a"), 0.75), a=a), want_lit)


def test_int_true_division_is_float(rng: np.random.Generator) -> None:
    a, b = small_ints(rng), small_ints(rng, -3, 3)
    with np.errstate(all="ignore"):
        want = a / b
    assert_same(ev(col("a") / col("b"), a=a, b=b), want)


@pytest.mark.parametrize("op", list(CMP))
def test_comparisons_match_numpy(rng: np.random.Generator, op: str) -> None:
    f = CMP[op]
    i, j = small_ints(rng, -5, 5), small_ints(rng, -5, 5)
    x, y = floats(rng), floats(rng)
    p, q = bools(rng), bools(rng)
    assert_same(ev(f(col("i"), col("j")), i=i, j=j), f(i, j))
    assert_same(ev(f(col("x"), col("y")), x=x, y=y), f(x, y))
    assert_same(ev(f(col("i"), col("x")), i=i, x=x), f(i, x))
    assert_same(ev(f(col("p"), col("q")), p=p, q=q), f(p, q))
    assert_same(ev(f(col("x"), 3), x=x), f(x, 3.0))
    assert_same(ev(f(2, col("i")), i=i), f(np.int64(2), i))


def test_str_equality(rng: np.random.Generator) -> None:
    s = rng.choice(np.array(["apple", "pear", "fig", ""], dtype=object), N)
    t = rng.choice(np.array(["apple", "pear", "kiwi", ""]), N)  # unicode dtype
    assert_same(ev(col("s") == col("t"), s=s, t=t), s == t.astype(object))
    assert_same(ev(col("s") != "pear", s=s), s != "pear")
    assert_same(ev("fig" == col("s"), s=s), s == "fig")


def test_boolean_logic_matches_numpy(rng: np.random.Generator) -> None:
    p, q = bools(rng), bools(rng)
    assert_same(ev(col("p") & col("q"), p=p, q=q), p & q)
    assert_same(ev(col("p") | col("q"), p=p, q=q), p | q)
    assert_same(ev(~col("p"), p=p), ~p)
    assert_same(ev(True & col("p"), p=p), p)
    assert_same(ev(col("p") | False, p=p), p)
    assert_same(ev(~((col("p") & ~col("q")) | (col("q") & ~col("p"))), p=p, q=q), p == q)


def test_negation_matches_numpy(rng: np.random.Generator) -> None:
    a, x = small_ints(rng), floats(rng)
    assert_same(ev(-col("a"), a=a), -a)
    assert_same(ev(-col("x"), x=x), -x)


def test_casts_match_numpy(rng: np.random.Generator) -> None:
    a, p = small_ints(rng, -3, 3), bools(rng)
    x = rng.normal(0, 1e6, N)
    x[:4] = [-0.9, 0.9, -2.5, 2.5]
    y = floats(rng)
    assert_same(ev(col("a").cast("float64"), a=a), a.astype(np.float64))
    assert_same(ev(col("a").cast(bool), a=a), a.astype(bool))
    assert_same(ev(col("x").cast("int64"), x=x), x.astype(np.int64))
    assert_same(ev(col("y").cast("bool"), y=y), y.astype(bool))
    assert_same(ev(col("p").cast(int), p=p), p.astype(np.int64))
    assert_same(ev(col("p").cast(float), p=p), p.astype(np.float64))
    assert_same(ev(col("a").cast("int64"), a=a), a)


def test_float_to_int_cast_errors() -> None:
    with pytest.raises(OverflowError, match=r"row 1"):
        ev(col("x").cast("int64"), x=np.array([1.0, 2.0**63, 3.0]))
    with pytest.raises(OverflowError):
        ev(col("x").cast("int64"), x=np.array([-np.inf]))
    with pytest.raises(InvalidValueError, match="NaN"):
        ev(col("x").cast("int64"), x=np.array([np.nan]))
    assert_same(ev(col("x").cast("int64"), x=np.array([-(2.0**63)])), np.array([I64_MIN]))


def test_min_max_match_numpy(rng: np.random.Generator) -> None:
    a, b = small_ints(rng), small_ints(rng)
    x, y = floats(rng), floats(rng)
    p, q = bools(rng), bools(rng)
    assert_same(ev(min_of(col("a"), col("b")), a=a, b=b), np.minimum(a, b))
    assert_same(ev(max_of(col("a"), col("b")), a=a, b=b), np.maximum(a, b))
    assert_same(ev(min_of(col("x"), col("y")), x=x, y=y), np.minimum(x, y))
    assert_same(ev(max_of(col("x"), col("y")), x=x, y=y), np.maximum(x, y))
    assert_same(ev(max_of(col("a"), col("x")), a=a, x=x), np.maximum(a, x))
    assert_same(ev(min_of(col("a"), 0), a=a), np.minimum(a, 0))
    assert_same(ev(min_of(col("p"), col("q")), p=p, q=q), np.minimum(p, q))
    assert_same(ev(max_of(col("p"), col("q")), p=p, q=q), np.maximum(p, q))


def test_when_matches_numpy_where(rng: np.random.Generator) -> None:
    a, x, p = small_ints(rng), floats(rng), bools(rng)
    assert_same(
        ev(when(col("p")).then(col("a")).otherwise(-col("a")), a=a, p=p), np.where(p, a, -a)
    )
    assert_same(
        ev(when(col("p")).then(col("a")).otherwise(col("x")), a=a, x=x, p=p), np.where(p, a, x)
    )
    assert_same(
        ev(when(col("a") > 0).then(True).otherwise(col("p")), a=a, p=p), np.where(a > 0, True, p)
    )
    chained = when(col("a") < -500).then(0).when(col("a") < 0).then(1).otherwise(2)
    assert_same(ev(chained, a=a), np.select([a < -500, a < 0], [0, 1], 2))
    s = ev(when(col("p")).then(lit("yes")).otherwise("no"), p=p)
    assert s.dtype == object
    assert list(s) == ["yes" if v else "no" for v in p]


def test_when_guards_failing_rows() -> None:
    a = np.array([7, 5, I64_MIN, 9], dtype=np.int64)
    b = np.array([2, 0, -1, 3], dtype=np.int64)
    safe = when((col("b") != 0) & (col("b") != -1)).then(col("a") // col("b")).otherwise(-1)
    assert_same(ev(safe, a=a, b=b), np.array([3, -1, -1, 3]))
    with pytest.raises(DivisionByZeroError):
        ev(col("a") // col("b"), a=a, b=b)


# -- int64 overflow and division by zero vs exact Python integers ----------------------------

int64_elems = st.one_of(
    st.integers(-10, 10),
    st.integers(I64_MIN, I64_MAX),
    st.sampled_from([I64_MIN, I64_MAX, I64_MIN + 1, I64_MAX - 1, -1, 0, 1, 2, -2]),
    st.integers(-(2**32), 2**32),
)
int64_arrays = arrays(np.int64, st.integers(0, 12), elements=int64_elems)


def _expected(
    f: Callable[[int, int], int], a: np.ndarray, b: np.ndarray
) -> np.ndarray | type[Exception]:
    """Exact per-row results, or the exception class of the first failing row."""
    out = []
    for x, y in zip(a.tolist(), b.tolist(), strict=False):
        try:
            v = f(x, y)
        except ZeroDivisionError:
            return DivisionByZeroError
        if not I64_MIN <= v <= I64_MAX:
            return OverflowError
        out.append(v)
    return np.array(out, dtype=np.int64)


@pytest.mark.parametrize("op", list(ARITH))
@settings(max_examples=150, deadline=None)
@given(a=int64_arrays, b=int64_arrays)
def test_int_overflow_and_division_by_zero(op: str, a: np.ndarray, b: np.ndarray) -> None:
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    f = ARITH[op]
    want = _expected(f, a, b)
    e = f(col("a"), col("b"))
    if isinstance(want, np.ndarray):
        assert_same(ev(e, a=a, b=b), want)
        if op in ("//", "%"):  # where numpy does not overflow, it agrees too
            assert_same(ev(e, a=a, b=b), f(a, b))
    else:
        with pytest.raises(want) as info:
            ev(e, a=a, b=b)
        assert repr(e) in str(info.value)
        assert "row " in str(info.value)


@settings(max_examples=100, deadline=None)
@given(a=int64_arrays)
def test_int_negation_overflow(a: np.ndarray) -> None:
    if I64_MIN in a.tolist():
        with pytest.raises(OverflowError, match=str(I64_MIN)):
            ev(-col("a"), a=a)
    else:
        assert_same(ev(-col("a"), a=a), -a)


def test_overflow_messages_name_expression_values_and_row() -> None:
    a = np.array([1, I64_MAX], dtype=np.int64)
    with pytest.raises(OverflowError) as info:
        ev(col("a") + 1, a=a)
    msg = str(info.value)
    assert '(col("a") + 1)' in msg and "row 1" in msg and str(I64_MAX) in msg
    with pytest.raises(DivisionByZeroError, match=r"row 0.*5 // 0"):
        ev(col("a") // col("b"), a=np.array([5]), b=np.array([0]))
    with pytest.raises(DivisionByZeroError, match="% 0"):
        ev(col("a") % 0, a=np.array([5]))
    with pytest.raises(OverflowError):
        ev(col("a") // -1, a=np.array([I64_MIN]))
    assert_same(ev(col("a") % -1, a=np.array([I64_MIN])), np.array([0]))
    with pytest.raises(OverflowError):
        ev(col("a") * 3, a=np.array([I64_MAX // 2]))
    with pytest.raises(OverflowError):
        ev(col("a") - 1, a=np.array([I64_MIN]))
    # Errors are Python builtins too.
    with pytest.raises(ZeroDivisionError):
        ev(col("a") // 0, a=np.array([1]))
    with pytest.raises(ArithmeticError):
        ev(col("a") + 1, a=np.array([I64_MAX]))


def test_float_division_by_zero_is_ieee() -> None:
    x = np.array([1.0, -1.0, 0.0, np.nan])
    with np.errstate(all="ignore"):
        for f in (operator.floordiv, operator.mod, operator.truediv):
            assert_same(ev(f(col("x"), 0.0), x=x), f(x, 0.0))
    assert_same(ev(col("a") / 0, a=np.array([1, -1])), np.array([np.inf, -np.inf]))


@settings(max_examples=200, deadline=None)
@given(
    a=arrays(np.float64, 8, elements=st.floats(allow_nan=True, allow_infinity=True)),
    b=arrays(np.float64, 8, elements=st.floats(allow_nan=True, allow_infinity=True)),
)
def test_float_ops_match_numpy_everywhere(a: np.ndarray, b: np.ndarray) -> None:
    for f in (*ARITH.values(), operator.truediv):
        with np.errstate(all="ignore"):
            want = f(a, b)
        assert_same(ev(f(col("a"), col("b")), a=a, b=b), want)
    assert_same(ev(min_of(col("a"), col("b")), a=a, b=b), np.minimum(a, b))


# -- binding errors ------------------------------------------------------------------------


def test_missing_column_names_it() -> None:
    with pytest.raises(ColumnNotFoundError) as info:
        ev(col("a") + col("nope"), a=np.arange(3))
    msg = str(info.value)
    assert '"nope"' in msg and '(col("a") + col("nope"))' in msg and '"a"' in msg
    with pytest.raises(KeyError):
        ev(col("x"), a=np.arange(3))


@pytest.mark.parametrize(
    ("expr", "dtypes"),
    [
        (col("i") + col("s"), "int64 and str"),
        (col("p") + 1, "bool and int64"),
        (col("i") & col("p"), "int64 and bool"),
        (~col("i"), "int64"),
        (-col("p"), "bool"),
        (when(col("i")).then(1).otherwise(2), "int64"),
        (when(col("p")).then(1).otherwise("x"), "int64 and str"),
        (min_of(col("s"), col("s")), "str and str"),
        (col("i") == col("p"), "int64 with bool"),
        (col("p").cast("date32"), "bool to date32"),
        (col("x") / col("s"), "float64 and str"),
    ],
)
def test_type_errors(expr: Expr, dtypes: str) -> None:
    cols = {
        "i": np.arange(3),
        "x": np.ones(3),
        "p": np.ones(3, dtype=bool),
        "s": np.array(["a", "b", "c"], dtype=object),
    }
    with pytest.raises(SchemaTypeError) as info:
        ev(expr, **cols)
    msg = str(info.value)
    assert repr(expr) in msg and dtypes in msg
    with pytest.raises(TypeError):
        ev(expr, **cols)
    with pytest.raises(SchemaTypeError):
        _core.expr_dtype(
            json.dumps(expr.to_json()),
            [("i", "int64"), ("x", "float64"), ("p", "bool"), ("s", "str")],
        )
