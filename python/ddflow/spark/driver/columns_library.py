"""The expression library (``is_in``, math, ``.str``, ``concat_str``) compiled to Spark Column
functions, where Spark's result equals the Rust evaluator's exactly.

Everything else raises :class:`NotCompilable`, and the stage runs the Rust evaluator in
``mapInArrow`` (identical results matter more than pushing work into Spark):

* compiled: ``is_in`` (float lists as NaN-aware equalities), ``abs`` (int64 overflow raises
  like the engine), int64 ``round``/``floor``/``ceil`` (the identity), ``sqrt`` (IEEE, correctly
  rounded in both), ``rem`` (guarded against Spark's null for a zero divisor), ``len_chars``,
  ``strip_chars`` (a ``(?U)\\s`` regex: Unicode ``White_Space``, as Rust), ``starts_with``,
  ``ends_with``, literal ``contains``, ``like``, ``slice`` (``substring`` is 1-based), literal
  ``replace`` (``instr`` and ``substr``: the first match only), ``concat_str``
  (``concat_ws``; there are no nulls);
* regex ``contains`` only for patterns in a small syntax both engines read alike (ASCII
  literals, simple classes, groups, ``| * + ?`` and ``^``); ``.`` and ``$`` differ on line
  terminators, ``\\d``/``\\w``/``\\s`` on Unicode, flags and escapes in many details;
* left to Rust: float64 ``round``/``floor``/``ceil`` (Spark's ``floor``/``ceil`` return
  bigint, its ``round`` rounds ``Double.toString``'s digits, which JDK 17 does not always
  print shortest), ``log``/``exp``/``pow`` (``java.lang.Math`` may differ from C's libm in
  the last bit; Spark's ``log`` is null at 0), ``to_lowercase``/``to_uppercase`` (the JVM's
  Unicode tables and default locale), regex ``replace``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from ddflow.expr_functions import FUNCTION_OPS
from ddflow.spark.driver.columns import (
    SPARK_TYPES,
    NotCompilable,
    Typed,
    _compare,
    _overflow,
    all_set,
)

__all__ = ["LIBRARY_OPS", "compile_function"]

Compile = Callable[[Mapping[str, Any], Mapping[str, Typed], str, bool], Typed]
"""``compile_expr``'s signature (passed in: ``columns`` imports this module lazily)."""

LIBRARY_OPS: frozenset[str] = FUNCTION_OPS
"""The library's JSON ``op`` names (``ddflow.expr_functions``)."""

_I64_MIN = -(2**63)
_INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)
_MAX_FLOAT_LIST = 16

# Regexes that Java and the Rust regex crate read alike: ASCII literals, simple classes,
# groups, alternation, greedy quantifiers after an atom, and ^.
_ATOM = r"[A-Za-z0-9 _,]|\[\^?(?:[A-Za-z0-9_ ](?:-[A-Za-z0-9])?)+\]|[()]"
_SAFE_TOKEN = re.compile(rf"(?:{_ATOM})[*+?]?|[|^]")


def _java_reads_alike(pattern: str) -> bool:
    """Whether ``pattern`` is in the syntax both regex engines read alike."""
    pos = 0
    while pos < len(pattern):
        m = _SAFE_TOKEN.match(pattern, pos)
        if m is None:
            return False
        if m.group().startswith("(") and len(m.group()) > 1:
            return False  # a quantified "(" is malformed anyway
        pos = m.end()
    return "(?" not in pattern


def _literal(node: Mapping[str, Any]) -> tuple[Any, str]:
    """The value and dtype of a literal node."""
    value, dtype = node["value"], node["dtype"]
    return (float(value) if dtype == "float64" else value), dtype


def _is_in(c: Column, t: str, values: list[Mapping[str, Any]]) -> Typed:
    lits = [_literal(v) for v in values]
    kinds = {d for _, d in lits}
    numeric = {"int64", "float64"}
    if not lits:
        return F.lit(False), "bool"
    if t in numeric and kinds <= numeric and (t == "float64" or "float64" in kinds):
        x = c.cast("double")
        finite = [float(v) for v, _ in lits if not math.isnan(float(v))]
        if len(finite) > _MAX_FLOAT_LIST:
            raise NotCompilable("is_in over a long float list")
        acc = F.lit(False)
        for v in finite:
            eq, _ = _compare("eq", (x, "float64"), (F.lit(v).cast("double"), "float64"))
            acc = acc | eq
        return acc, "bool"
    if (t == "int64" and kinds == {"int64"}) or (t in ("str", "bool") and kinds == {t}):
        return c.isin([v for v, _ in lits]), "bool"
    raise NotCompilable(f"is_in of {t} with {sorted(kinds)}")


def _math(op: str, c: Column, t: str, label: str, may_raise: bool) -> Typed:
    if t not in ("int64", "float64"):
        raise NotCompilable(f"{op} on {t}")
    if op == "abs":
        if t == "float64":
            return F.abs(c), t
        return F.when(c == F.lit(_I64_MIN), _overflow(label, "abs", may_raise)).otherwise(
            F.abs(c)
        ), t
    if op in ("round", "floor", "ceil"):
        if t == "int64":
            return c, t
        raise NotCompilable(f"float64 {op} (Spark's differs)")
    if op == "sqrt":
        return F.sqrt(c.cast("double")), "float64"
    raise NotCompilable(f"{op} (java.lang.Math may differ from libm in the last bit)")


def _rem(a: Typed, b: Typed, label: str, may_raise: bool) -> Typed:
    (ca, ta), (cb, tb) = a, b
    if ta not in ("int64", "float64") or tb not in ("int64", "float64"):
        raise NotCompilable(f"rem on {ta}, {tb}")
    if ta == "float64" or tb == "float64":
        x, y = ca.cast("double"), cb.cast("double")
        return F.when(y == F.lit(0.0), F.lit(math.nan)).otherwise(x % y), "float64"
    if not may_raise:
        raise NotCompilable("int64 rem can divide by zero (errors are collected as data)")
    zero = F.raise_error(F.lit(f"ddflow: {label}: integer modulo by zero in rem"))
    return F.when(cb == F.lit(0), zero).otherwise(ca % cb), "int64"


def _slice(c: Column, offset: int, length: int | None) -> Column:
    pos = offset + 1 if offset >= 0 else offset
    n = _INT_MAX if length is None else length
    if not (_INT_MIN <= pos <= _INT_MAX and 0 <= n <= _INT_MAX):
        raise NotCompilable("str.slice beyond the int32 range of Spark's substring")
    return F.substring(c, pos, n)


def _replace_first_literal(c: Column, pattern: str, value: str) -> Column:
    at = F.instr(c, pattern)  # 1-based code point index of the first match, 0 if none
    before = c.substr(F.lit(1), at - F.lit(1))
    after = c.substr(at + F.lit(len(pattern)), F.lit(_INT_MAX))
    return F.when(at == F.lit(0), c).otherwise(F.concat(before, F.lit(value), after))


def _string(op: str, c: Column, expr: Mapping[str, Any]) -> Typed:
    if op == "str.len_chars":
        return F.length(c).cast(SPARK_TYPES["int64"]), "int64"
    if op == "str.strip_chars":
        return F.regexp_replace(c, r"(?U)^\s+|\s+\z", ""), "str"
    if op == "str.starts_with":
        return c.startswith(expr["prefix"]), "bool"
    if op == "str.ends_with":
        return c.endswith(expr["suffix"]), "bool"
    if op == "str.contains":
        pattern = expr["pattern"]
        if expr.get("literal", False):
            return c.contains(pattern), "bool"
        if _java_reads_alike(pattern):
            return c.rlike(pattern), "bool"
        raise NotCompilable(f"regex {pattern!r} may read differently in Java")
    if op == "str.like":
        return c.like(expr["pattern"]), "bool"
    if op == "str.slice":
        return _slice(c, expr["offset"], expr.get("length")), "str"
    if op == "str.replace" and expr.get("literal", False):
        return _replace_first_literal(c, expr["pattern"], expr["value"]), "str"
    raise NotCompilable(f"{op} (the JVM's result may differ)")


def compile_function(
    expr: Mapping[str, Any],
    columns: Mapping[str, Typed],
    label: str,
    may_raise: bool,
    compile_sub: Compile,
) -> Typed:
    """The Spark Column and dtype of library node ``expr``; operands are compiled with
    ``compile_sub`` (``compile_expr``). Raises :class:`NotCompilable` where Spark is not
    exact."""
    op = expr["op"]
    if op not in LIBRARY_OPS:
        raise NotCompilable(op)
    if op == "concat_str":
        parts = [compile_sub(a, columns, label, may_raise) for a in expr["args"]]
        if any(t != "str" for _, t in parts):
            raise NotCompilable("concat_str of non-str")
        # concat, not concat_ws (which skips nulls): null where a part is, as on the engine.
        sep = F.lit(expr.get("separator", ""))
        joined = [parts[0][0]]
        for c, _ in parts[1:]:
            joined += [sep, c]
        return F.concat(*joined), "str"
    if op in ("pow", "rem"):
        a, b = (compile_sub(x, columns, label, may_raise) for x in expr["args"])
        if op == "pow":
            raise NotCompilable("pow (java.lang.Math may differ from libm in the last bit)")
        c, t = _rem(a, b, label, may_raise)
        return F.when(all_set([a, b]), c), t
    c, t = compile_sub(expr["arg"], columns, label, may_raise)
    if op == "is_in":
        found, tf = _is_in(c, t, expr["values"])
        return F.when(c.isNotNull(), found), tf
    if op.startswith("str."):
        if t != "str":
            raise NotCompilable(f"{op} on {t}")
        return _string(op, c, expr)
    return _math(op, c, t, label, may_raise)
