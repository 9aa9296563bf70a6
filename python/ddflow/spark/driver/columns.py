"""Column expressions (``dd.col(..)`` JSON) compiled to Spark Column expressions.

Only the part of the expression language whose Spark semantics equal the Rust evaluator's
exactly is compiled; anything else raises :class:`NotCompilable` and the stage runs the Rust
evaluator in ``mapInArrow`` instead (``tasks/batch_functions.py``). Exactness notes:

* int64 ``+ -`` and negation raise on overflow like the engine (Spark would wrap), and so
  does a result of -2**63, the int64 word the engine reserves for null; ``*`` on int64 is
  left to Rust.
* float comparisons give ``False`` (``!=``: ``True``) when either side is NaN, as IEEE and the
  engine do (Spark orders NaN above every number and calls it equal to itself).
* ``/``, ``//``, ``%``, float ``min_of``/``max_of`` and casts from float are left to Rust
  (Spark's division by zero gives null, its ``least``/``greatest`` order NaN differently).
* A column of a logical dtype (date, timestamp, decimal, a narrow integer) is passed through
  by a select unchanged; comparisons of dates, of decimals and of session-zoned timestamps
  (columns or literals) and their null tests compile (``columns_logical.py``: Spark's are
  exact there); any other expression reading one, and a literal of one, is left to Rust
  (Spark's date, timestamp and decimal arithmetic, rounding and casts differ from the
  engine's in places; none is compiled until proven equal).
* SQL nulls: Spark's operators, comparisons, casts, Kleene ``&``/``|``/``~``, ``when`` (a
  null condition takes ``otherwise``) and ``where`` (keeps true only) follow the engine's
  rules; ``is_null``/``is_not_null``/``coalesce`` are Spark's own. Where a Spark function
  skips nulls (``least``/``greatest``, ``concat_ws``) or answers for a null beside a NaN
  (``isnan``) or a zero divisor, the compiled column is guarded to be null where an operand
  is (:func:`all_set`), as on the engine. A typed null literal is a cast null; one without a
  dtype (an outer join's padding) is Spark's ``NullType`` until a ``concat`` gives it the
  type of the column beside it (``operators.py``), as the engine's dtype links do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ddflow.plan import NegateOp, ScaleOp
from ddflow.spark.driver.columns_logical import compile_logical

__all__ = [
    "NotCompilable",
    "compile_expr",
    "compile_output",
    "all_set",
    "UNTYPED_NULL",
    "SPARK_TYPES",
    "negate_diffs",
    "scale_diffs",
]

SPARK_TYPES: dict[str, T.DataType] = {
    "int64": T.LongType(),
    "float64": T.DoubleType(),
    "bool": T.BooleanType(),
    "str": T.StringType(),
}

_I64_MIN = -(2**63)

UNTYPED_NULL = "null"
"""The pseudo-dtype of a null without a dtype (``{"op": "lit", "value": null}``)."""

Typed = tuple[Column, str]


class NotCompilable(Exception):
    """The expression has no exactly equivalent Spark Column expression."""


def _overflow(label: str, what: str, may_raise: bool = True) -> Column:
    if not may_raise:
        # Collect mode: an overflowing record must become an error row, which only the Rust
        # evaluator's stage can produce.
        raise NotCompilable(f"int64 {what} can overflow (errors are collected as data)")
    return F.raise_error(F.lit(f"ddflow: {label}: int64 overflow in {what}"))


def _arith(op: str, a: Typed, b: Typed, label: str, may_raise: bool = True) -> Typed:
    (ca, ta), (cb, tb) = a, b
    if ta not in ("int64", "float64") or tb not in ("int64", "float64"):
        raise NotCompilable(f"{op} on {ta}, {tb}")
    if ta == "float64" or tb == "float64":
        x, y = ca.cast("double"), cb.cast("double")
        r = {"add": x + y, "sub": x - y, "mul": x * y}[op]
        return r, "float64"
    if op == "mul":
        raise NotCompilable("int64 multiplication")
    r = ca + cb if op == "add" else ca - cb
    # Two's complement overflow test on the wrapped result; -2**63 is the engine's null word,
    # so a result equal to it overflows as well.
    if op == "add":
        bad = ca.bitwiseXOR(r).bitwiseAND(cb.bitwiseXOR(r)) < 0
    else:
        bad = ca.bitwiseXOR(cb).bitwiseAND(ca.bitwiseXOR(r)) < 0
    bad = bad | (r == F.lit(_I64_MIN))
    return F.when(bad, _overflow(label, op, may_raise)).otherwise(r), "int64"


_CMP: dict[str, Callable[[Column, Column], Column]] = {
    "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != y,
    "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y,
    "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y,
}


def _compare(op: str, a: Typed, b: Typed) -> Typed:
    (ca, ta), (cb, tb) = a, b
    numeric = {"int64", "float64"}
    if ta in numeric and tb in numeric:
        if ta == "float64" or tb == "float64":
            x, y = ca.cast("double"), cb.cast("double")
            # isnan(null) is false: a null operand beside a NaN stays null, as on the engine.
            nan = (F.isnan(x) | F.isnan(y)) & x.isNotNull() & y.isNotNull()
            return F.when(nan, F.lit(op == "ne")).otherwise(_CMP[op](x, y)), "bool"
        return _CMP[op](ca, cb), "bool"
    if ta != tb:
        raise NotCompilable(f"{op} on {ta}, {tb}")
    if ta == "str" and op not in ("eq", "ne"):
        raise NotCompilable(f"{op} on str")
    return _CMP[op](ca, cb), "bool"


def all_set(args: Sequence[Typed]) -> Column:
    """True where no operand is null (Spark's functions that skip nulls are guarded by it)."""
    return functools.reduce(lambda a, b: a & b, [c.isNotNull() for c, _ in args])


def compile_output(
    expr: dict[str, Any], columns: Mapping[str, Typed], label: str, may_raise: bool = True
) -> Typed:
    """A select's output column: a column passed through (of any dtype, a logical one too:
    Spark moves it unchanged), else :func:`compile_expr`."""
    inner = expr
    while inner["op"] == "alias":
        inner = inner["arg"]
    if inner["op"] == "col" and inner["name"] in columns:
        return columns[inner["name"]]
    return compile_expr(expr, columns, label, may_raise)


def compile_expr(
    expr: Mapping[str, Any], columns: Mapping[str, Typed], label: str, may_raise: bool = True
) -> Typed:
    """The Spark Column and ddflow dtype of expression JSON ``expr`` over ``columns``.

    Raises :class:`NotCompilable` when no exactly equivalent Spark expression is known, or
    (``may_raise=False``, for ``errors="collect"``) when the expression would have to fail
    the Spark task on some record.
    """
    op = expr["op"]
    logical = compile_logical(expr, columns)
    if logical is not None:
        return logical
    if op == "col":
        name = expr["name"]
        if name not in columns:
            raise NotCompilable(f"column {name!r}")
        if columns[name][1] not in SPARK_TYPES:
            # A logical dtype (date, timestamp, decimal, narrow integer): the Rust evaluator.
            raise NotCompilable(f"column {name!r} of dtype {columns[name][1]}")
        return columns[name]
    if op == "lit":
        value = expr["value"]
        if value is None:
            dtype = expr.get("dtype")
            if dtype is None:
                # A null without a dtype (an outer join's padding, a whole select column):
                # Spark's NullType, given its peer's type where the concat unions it.
                return F.lit(None), UNTYPED_NULL
            if dtype not in SPARK_TYPES:
                raise NotCompilable(f"null of {dtype}")
            return F.lit(None).cast(SPARK_TYPES[dtype]), dtype
        dtype = expr.get("dtype") or (
            "bool"
            if isinstance(value, bool)
            else "int64"
            if isinstance(value, int)
            else "float64"
            if isinstance(value, float)
            else "str"
        )
        if dtype == "float64":
            value = float(value)
        if dtype not in SPARK_TYPES:
            raise NotCompilable(f"literal of {dtype}")
        return F.lit(value).cast(SPARK_TYPES[dtype]), dtype
    if op == "alias":
        return compile_expr(expr["arg"], columns, label, may_raise)
    if op in ("add", "sub", "mul"):
        args = [compile_expr(a, columns, label, may_raise) for a in expr["args"]]
        acc = args[0]
        for nxt in args[1:]:
            acc = _arith(op, acc, nxt, label, may_raise)
        return acc
    if op in _CMP:
        args = [compile_expr(a, columns, label, may_raise) for a in expr["args"]]
        if len(args) != 2:
            raise NotCompilable(f"{op} of {len(args)} arguments")
        return _compare(op, args[0], args[1])
    if op in ("and", "or"):
        args = [compile_expr(a, columns, label, may_raise) for a in expr["args"]]
        if any(t != "bool" for _, t in args):
            raise NotCompilable(f"{op} on non-bool")
        acc_c = args[0][0]
        for c, _ in args[1:]:
            acc_c = (acc_c & c) if op == "and" else (acc_c | c)
        return acc_c, "bool"
    if op == "not":
        c, t = compile_expr(expr["arg"], columns, label, may_raise)
        if t != "bool":
            raise NotCompilable("not on non-bool")
        return ~c, "bool"
    if op == "neg":
        c, t = compile_expr(expr["arg"], columns, label, may_raise)
        if t == "float64":
            return -c, t
        if t == "int64":
            return F.when(c == F.lit(_I64_MIN), _overflow(label, "neg", may_raise)).otherwise(-c), t
        raise NotCompilable(f"neg on {t}")
    if op in ("min_of", "max_of"):
        args = [compile_expr(a, columns, label, may_raise) for a in expr["args"]]
        if any(t != "int64" for _, t in args):
            raise NotCompilable(f"{op} on non-int64")
        fn = F.least if op == "min_of" else F.greatest
        # Spark's least/greatest skip nulls; the engine's min_of/max_of are null then.
        return F.when(all_set(args), fn(*[c for c, _ in args])), "int64"
    if op in ("is_null", "is_not_null"):
        c, _ = compile_expr(expr["arg"], columns, label, may_raise)
        return (c.isNull() if op == "is_null" else c.isNotNull()), "bool"
    if op == "coalesce":
        args = [compile_expr(a, columns, label, may_raise) for a in expr["args"]]
        kinds = {t for _, t in args}
        if len(kinds) == 1:
            return F.coalesce(*[c for c, _ in args]), kinds.pop()
        if kinds == {"int64", "float64"}:
            return F.coalesce(*[c.cast("double") for c, _ in args]), "float64"
        raise NotCompilable(f"coalesce of {sorted(kinds)}")
    if op == "cast":
        if expr.get("strict") is False:
            raise NotCompilable("cast(strict=False)")
        c, t = compile_expr(expr["arg"], columns, label, may_raise)
        to = expr["dtype"]
        if to == t:
            return c, t
        if (t, to) in (("int64", "float64"), ("bool", "float64"), ("bool", "int64")):
            return c.cast(SPARK_TYPES[to]), to
        if (t, to) == ("int64", "bool"):
            return c != F.lit(0), "bool"
        raise NotCompilable(f"cast {t} -> {to}")
    if op == "when":
        cond, tc = compile_expr(expr["cond"], columns, label, may_raise)
        then, tt = compile_expr(expr["then"], columns, label, may_raise)
        other, to = compile_expr(expr["otherwise"], columns, label, may_raise)
        if tc != "bool":
            raise NotCompilable("when condition not bool")
        if tt == to:
            return F.when(cond, then).otherwise(other), tt
        if {tt, to} == {"int64", "float64"}:
            return F.when(cond, then.cast("double")).otherwise(other.cast("double")), "float64"
        raise NotCompilable(f"when branches {tt}, {to}")
    # The expression library lives beside this module and imports it (hence here, lazily).
    from ddflow.spark.driver.columns_library import compile_function

    return compile_function(expr, columns, label, may_raise, compile_expr)


_I64_MAX = 2**63 - 1


def negate_diffs(df: DataFrame, diff: str, label: str) -> DataFrame:
    """Every diff (column ``diff``) negated. The one int64 without a negation fails the job
    naming ``label`` (Spark would wrap it to itself; the engine negates exactly)."""
    d = F.col(diff)
    negated = F.when(d == F.lit(_I64_MIN), _overflow(label, NegateOp.OP)).otherwise(-d)
    return df.select(*[c for c in df.columns if c != diff], negated.alias(diff))


def scale_diffs(df: DataFrame, diff: str, factor: int, label: str) -> DataFrame:
    """``scale``: every diff (column ``diff``) multiplied by ``factor``, rows dropped when
    it is 0. The product is computed in 38-digit decimals, so a result outside int64 raises
    naming the operator (the embedded engine keeps it exact as several updates)."""
    if factor == 0:
        return df.where(F.lit(False))
    wide = F.col(diff).cast("decimal(38,0)") * F.lit(factor).cast("decimal(38,0)")
    bad = (wide > F.lit(_I64_MAX)) | (wide < F.lit(-_I64_MAX - 1))
    scaled = F.when(bad, _overflow(label, ScaleOp.OP)).otherwise(wide.cast("long"))
    return df.select(*[c for c in df.columns if c != diff], scaled.alias(diff))
