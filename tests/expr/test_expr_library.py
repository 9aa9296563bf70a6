"""The expression library (membership, math, ``.str``, ``concat_str``) evaluated in Rust
agrees with Python's own computation on random inputs, in ``_core.eval_expr`` and in a
running dataflow, where a failing row becomes an error update."""

from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import ddflow as dd
from ddflow import _core
from ddflow.errors import PlanError, SchemaTypeError
from ddflow.expr import Expr, col, lit
from ddflow.expr_functions import FUNCTION_OPS

N = 600
I64_MIN = -(2**63)

# Unicode White_Space (what Rust's char::is_whitespace and str::trim use; Python's isspace
# differs on \x1c-\x1f).
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
WHITE_SPACE += "\u2028\u2029\u202f\u205f\u3000"
ALPHABET = list("aAbBzZ09 _%.\t\n\x1c") + ["é", "É", "ß", "Σ", "σ", "İ", "ǅ", "😀", "\u2003"]


def ev(expr: Expr, /, **columns: Any) -> npt.NDArray[Any]:
    """Evaluates ``e`` in Rust on numpy columns."""
    return _core.eval_expr(json.dumps(expr.to_json()), columns)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261125)


def rand_strings(rng: np.random.Generator, n: int = N, max_len: int = 7) -> npt.NDArray[Any]:
    out = np.empty(n, dtype=object)
    for i in range(n):
        k = int(rng.integers(0, max_len + 1))
        out[i] = "".join(ALPHABET[j] for j in rng.integers(0, len(ALPHABET), k))
    return out


def rand_floats(rng: np.random.Generator) -> npt.NDArray[Any]:
    x = rng.normal(0, 50, N)
    integral = rng.random(N) < 0.2
    x[integral] = rng.integers(-20, 20, int(integral.sum()))
    decimal_like = rng.random(N) < 0.3
    x[decimal_like] = np.round(x[decimal_like], 3)
    halves = rng.random(N) < 0.1
    x[halves] = rng.integers(-40, 40, int(halves.sum())) / 8
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.675, 0.125, 1.005, -2.5, 2.5])
    idx = rng.random(N) < 0.1
    x[idx] = rng.choice(special, int(idx.sum()))
    return x


def same_floats(got: npt.NDArray[Any], want: list[float]) -> None:
    w = np.asarray(want, dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, w)


# -- references ------------------------------------------------------------------------------


def round_ref(x: float, d: int) -> float:
    if not math.isfinite(x) or x == 0:
        return x
    q = Decimal(repr(x)).quantize(Decimal(1).scaleb(-d), ROUND_HALF_UP, Context(prec=1000))
    return math.copysign(float(q), x)


def log_ref(x: float) -> float:
    if math.isnan(x) or x < 0:
        return math.nan
    return -math.inf if x == 0 else math.log(x)


def exp_ref(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def rem_int_ref(a: int, b: int) -> int:
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def like_ref(s: str, pattern: str) -> bool:
    out, it = [], iter(pattern)
    for c in it:
        if c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        elif c == "\\":
            out.append(re.escape(next(it)))
        else:
            out.append(re.escape(c))
    return re.fullmatch("".join(out), s, re.DOTALL) is not None


def slice_ref(s: str, offset: int, length: int | None) -> str:
    n = len(s)
    start = offset if offset >= 0 else n + offset
    end = n if length is None else start + length
    start, end = min(max(start, 0), n), min(max(end, 0), n)
    return s[start:end] if end > start else ""


# -- math ------------------------------------------------------------------------------------


def test_float_math_matches_python(rng: np.random.Generator) -> None:
    x = rand_floats(rng)
    xs = [float(v) for v in x]
    same_floats(ev(col("x").abs(), x=x), [abs(v) for v in xs])
    same_floats(ev(abs(col("x")), x=x), [abs(v) for v in xs])
    same_floats(ev(col("x").floor(), x=x), list(np.floor(x)))
    same_floats(ev(col("x").ceil(), x=x), list(np.ceil(x)))
    same_floats(ev(col("x").sqrt(), x=x), [math.sqrt(v) if v >= 0 else math.nan for v in xs])
    same_floats(ev(col("x").log(), x=x), [log_ref(v) for v in xs])
    same_floats(ev(col("x").exp(), x=x), [exp_ref(v) for v in xs])
    for d in (0, 1, 2, 3, 7):
        same_floats(ev(col("x").round(d), x=x), [round_ref(v, d) for v in xs])
    y = rng.normal(0, 7, N)
    y[rng.random(N) < 0.1] = 0.0
    with np.errstate(invalid="ignore"):
        want = np.fmod(x, y)  # C fmod: exact, the sign of the dividend, NaN for y == 0
    same_floats(ev(col("x").rem(col("y")), x=x, y=y), list(want))


def test_pow_matches_c_pow(rng: np.random.Generator) -> None:
    base = rng.uniform(0.01, 20, N)
    expo = rng.uniform(-6, 6, N)
    expo[::3] = np.round(expo[::3])
    got = ev(col("b").pow(col("e")), b=base, e=expo)
    same_floats(got, [math.pow(b, e) for b, e in zip(base, expo, strict=True)])
    same_floats(ev(col("b") ** 2, b=base), [math.pow(b, 2) for b in base])
    same_floats(ev(2 ** col("e"), e=expo), [math.pow(2, e) for e in expo])
    k = np.array([-3, 0, 4], dtype=np.int64)
    same_floats(ev(col("k").pow(col("k")), k=k), [(-3.0) ** -3, 1.0, 256.0])
    specials = ev(lit(0.0).pow(col("e")), e=np.array([-1.0, 0.0]))
    same_floats(specials, [math.inf, 1.0])
    assert math.isnan(ev(lit(-8.0).pow(col("e")), e=np.array([1 / 3]))[0])


def test_int_math_keeps_dtype_and_raises(rng: np.random.Generator) -> None:
    i = rng.integers(-(2**62), 2**62, N, dtype=np.int64)
    j = rng.integers(-9, 9, N, dtype=np.int64)
    j[j == 0] = 7
    for e, want in [
        (col("i").abs(), [abs(int(v)) for v in i]),
        (col("i").round(2), list(i)),
        (col("i").floor(), list(i)),
        (col("i").ceil(), list(i)),
        (col("i").rem(col("j")), [rem_int_ref(int(a), int(b)) for a, b in zip(i, j, strict=True)]),
    ]:
        got = ev(e, i=i, j=j)
        assert got.dtype == np.int64 and got.tolist() == [int(v) for v in want], e
    assert ev(col("i").sqrt(), i=np.array([4], dtype=np.int64)).tolist() == [2.0]
    assert ev(lit(I64_MIN).rem(-1), i=i).tolist() == [0] * N
    with pytest.raises(dd.OverflowError, match=r"row 1: abs\(-9223372036854775808\)"):
        ev(col("i").abs(), i=np.array([1, I64_MIN], dtype=np.int64))
    with pytest.raises(dd.DivisionByZeroError, match=r"7\.rem\(0\)"):
        ev(col("i").rem(col("j")), i=np.array([7]), j=np.array([0]))
    guarded = dd.when(col("j") != 0).then(col("i").rem(col("j"))).otherwise(-1)
    assert ev(guarded, i=np.array([7, 7]), j=np.array([0, -2])).tolist() == [-1, 1]


def test_membership(rng: np.random.Generator) -> None:
    i = rng.integers(-5, 5, N, dtype=np.int64)
    x = rand_floats(rng)
    s = rand_strings(rng, max_len=1)
    assert ev(col("i").is_in([1, 3, -4]), i=i).tolist() == [v in (1, 3, -4) for v in i]
    assert ev(col("i").is_in([]), i=i).tolist() == [False] * N
    vals = [0.0, 2.5, math.nan, math.inf, 3]
    want = [v in (0.0, 2.5, math.inf, 3.0) for v in x]  # NaN is in no list
    assert ev(col("x").is_in(vals), x=x).tolist() == want
    assert ev(col("i").is_in([1.5, 2]), i=i).tolist() == [v == 2 for v in i]
    assert ev(col("s").is_in(["a", "é"]), s=s).tolist() == [v in ("a", "é") for v in s]
    lo, hi = rng.normal(0, 30, N), rng.normal(10, 30, N)
    got = ev(col("x").is_between(col("lo"), col("hi")), x=x, lo=lo, hi=hi).tolist()
    assert got == [bool(a <= v <= b) for v, a, b in zip(x, lo, hi, strict=True)]
    assert ev(col("i").is_between(-1, 1), i=i).tolist() == [-1 <= v <= 1 for v in i]
    with pytest.raises(SchemaTypeError, match="is_in values"):
        ev(col("i").is_in(["a"]), i=i)
    with pytest.raises(PlanError, match="literals"):
        col("i").is_in([col("j")])


# -- strings ---------------------------------------------------------------------------------


def test_string_functions_match_python(rng: np.random.Generator) -> None:
    s = rand_strings(rng)
    t = rand_strings(rng)
    py = [str(v) for v in s]

    def check(e: Expr, want: list[Any]) -> None:
        got = ev(e, s=s, t=t)
        assert got.tolist() == want, e

    check(col("s").str.len_chars(), [len(v) for v in py])
    check(col("s").str.to_lowercase(), [v.lower() for v in py])
    check(col("s").str.to_uppercase(), [v.upper() for v in py])
    check(col("s").str.strip_chars(), [v.strip(WHITE_SPACE) for v in py])
    check(col("s").str.starts_with("a"), [v.startswith("a") for v in py])
    check(col("s").str.ends_with("é"), [v.endswith("é") for v in py])
    for pattern in ["a", "%", ".", ""]:
        check(col("s").str.contains(pattern, literal=True), [pattern in v for v in py])
    for pattern in ["a+b", "[aA][zZ]", "^a", "é|ß", "z$", r"\d", "(?i)σ"]:
        check(col("s").str.contains(pattern), [re.search(pattern, v) is not None for v in py])
    for pattern in ["a%", "%a", "_", "%_z%", "a\\%%", "", "%", "\\_%", "é_%"]:
        check(col("s").str.like(pattern), [like_ref(v, pattern) for v in py])
    for offset in (-9, -2, 0, 1, 3, 20):
        for length in (None, 0, 2, 10):
            check(col("s").str.slice(offset, length), [slice_ref(v, offset, length) for v in py])
    check(
        col("s").str.replace("a+", r"<\0$1>"),
        [re.sub("a+", lambda m: r"<\0$1>", v, count=1) for v in py],
    )
    check(col("s").str.replace(".", "!", literal=True), [v.replace(".", "!", 1) for v in py])
    check(col("s").str.replace("", "^", literal=True), ["^" + v for v in py])
    check(dd.concat_str([col("s"), "-", col("t")]), [f"{a}-{b}" for a, b in zip(s, t, strict=True)])
    check(
        col("s").str.concat(col("t"), separator="/"),
        [f"{a}/{b}" for a, b in zip(s, t, strict=True)],
    )
    check(dd.concat_str([col("s")], separator="x"), py)
    # Composition: produced strings are interned and feed further functions.
    check(col("s").str.to_uppercase().str.len_chars(), [len(v.upper()) for v in py])
    check(col("s").str.strip_chars() == col("s"), [v.strip(WHITE_SPACE) == v for v in py])


def test_plan_errors_at_build_time() -> None:
    with pytest.raises(PlanError, match="invalid regex"):
        col("s").str.contains("(a")
    col("s").str.contains("(a", literal=True)
    with pytest.raises(PlanError, match="invalid regex"):
        col("s").str.replace("[", "x")
    with pytest.raises(PlanError, match="LIKE"):
        col("s").str.like("a\\b")
    with pytest.raises(PlanError, match="length"):
        col("s").str.slice(0, -1)
    with pytest.raises(PlanError, match="decimals"):
        col("x").round(-1)
    with pytest.raises(PlanError, match="at least one expression"):
        dd.concat_str([])
    assert ev(dd.concat_str(["a", "b"]), x=np.zeros(2)).tolist() == ["ab", "ab"]
    with pytest.raises(SchemaTypeError, match="str.len_chars needs a str operand"):
        ev(col("i").str.len_chars(), i=np.array([1]))
    with pytest.raises(SchemaTypeError, match="abs needs"):
        ev(col("s").abs(), s=np.array(["a"], dtype=object))


@pytest.mark.parametrize(
    "e",
    [
        col("x").is_in([1, 2.5, "a", True]),
        lit(-2).abs(),
        col("x").round(3).floor().ceil().sqrt().log().exp(),
        col("x").pow(col("y")) + 2 ** col("x"),
        (col("x") % 2).rem(-3),
        col("s").str.slice(-2, None).str.replace("a\n", 'q"', literal=True),
        col("s").str.contains("é+", literal=False) & col("s").str.like("%\\_"),
        dd.concat_str([col("a"), "b"], separator=", ").str.to_uppercase(),
        col("s").str.starts_with("x") | col("s").str.ends_with("y"),
        col("s").str.strip_chars().str.to_lowercase().str.len_chars().alias("n"),
    ],
)
def test_repr_matches_rust_display_and_json_roundtrips(e: Expr) -> None:
    text = json.dumps(e.to_json())
    assert _core.expr_repr(text) == repr(e)
    assert _core.expr_output_name(text) == e.output_name()


def test_every_library_op_reaches_rust() -> None:
    s, x = col("s"), col("x")
    nodes = [
        x.is_in([1]), x.abs(), x.round(1), x.floor(), x.ceil(), x.sqrt(), x.log(), x.exp(),
        x.pow(2), x.rem(2), s.str.len_chars(), s.str.to_lowercase(), s.str.to_uppercase(),
        s.str.strip_chars(), s.str.starts_with("a"), s.str.ends_with("a"), s.str.contains("a"),
        s.str.like("a"), s.str.slice(0), s.str.replace("a", "b"), dd.concat_str([s]),
        x.dt.year(), x.dt.month(), x.dt.day(), x.dt.hour(), x.dt.minute(), x.dt.second(),
        x.dt.weekday(), x.dt.epoch("s"), x.dt.truncate("1mo"), x.dt.offset_by("-3mo"),
    ]  # fmt: skip
    assert {e.op for e in nodes} == FUNCTION_OPS
    for e in nodes:
        assert _core.expr_repr(json.dumps(e.to_json())) == repr(e)


# -- in a running dataflow -------------------------------------------------------------------


def test_select_filter_on_the_engine_with_errors_as_data(rng: np.random.Generator) -> None:
    s = rand_strings(rng, n=200)
    k = rng.integers(-3, 3, 200, dtype=np.int64)
    k[0] = I64_MIN + 1  # I64_MIN itself is int64's null word, refused at the input
    flow = dd.Dataflow()
    inp, c = flow.new_input(("s", "k"))
    out = c.select(
        up=col("s").str.to_uppercase(),
        tag=dd.concat_str([col("s").str.slice(0, 2), lit("#")]),
        a=col("k").abs(),
        r=lit(10).rem(col("k")),
    ).capture(errors="collect")
    kept = c.filter(col("s").str.like("%a%") & col("k").is_in([1, 2])).capture()
    inp.update_batch({"s": s, "k": k}, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    want = sorted(
        (str(v).upper(), str(v)[:2] + "#", abs(int(x)), rem_int_ref(10, int(x)))
        for v, x in zip(s, k, strict=True)
        if x != 0
    )
    rows = out.at(0).to_pylist()
    got = sorted((r["up"], r["tag"], r["a"], r["r"]) for r in rows for _ in range(r["diff"]))
    assert got == want
    errors = out.errors_at(0)
    messages = " ".join(e["message"] for e in errors)
    assert "10.rem(0)" in messages
    assert sum(e["count"] for e in errors) == int((k == 0).sum())
    want_kept = sorted(
        (str(v), int(x)) for v, x in zip(s, k, strict=True) if "a" in str(v) and x in (1, 2)
    )
    got_kept = sorted((r["s"], r["k"]) for r in kept.at(0).to_pylist() for _ in range(r["diff"]))
    assert got_kept == want_kept
