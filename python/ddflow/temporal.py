"""Temporal filters: ``dd.now()`` in ``Collection.filter``, as Materialize's ``mz_now()``.

``c.filter(dd.col("ts") + dd.duration("1m") > dd.now())`` keeps each row only while the
condition holds: the row enters the output at the logical time its interval opens and is
retracted at the time it closes, so a sliding-window view holds only the window.

A predicate with ``now()`` is split here into the comparisons with ``now()`` (each
``expr OP now()`` or ``now() OP expr`` with ``OP`` one of ``< <= > >=``, ``expr`` free of
``now()``, joined by ``&``) and the rest, an ordinary filter. The comparisons become one
``temporal_filter`` plan node with lower bounds (``now() >= x``, strict ``now() > x``) and
upper bounds (``now() < x`` strict, ``now() <= x``). ``now()`` anywhere else (in ``select``,
under ``|`` or ``~``, on both sides of a comparison, compared with ``==``) is a
:class:`~ddflow.errors.PlanError` naming the operator and the expression.

Units: ``now()`` is the logical time, an int. An integer bound compares with it as it is; a
timestamp bound as milliseconds since the Unix epoch (the run loop's processing time, and
what a source's timestamp ``time_column=`` gives), exactly (``now() < ts`` for ``ts`` in
microseconds holds while ``now() * 1000 < ts``); a date bound as the milliseconds of its
midnight. A bound of another dtype makes every record an error update naming the bound. A
null bound means the row never holds (SQL: a comparison with null is not true). Times must
be one int (``time_dims == 1``) at the top level.
"""

from __future__ import annotations

from ddflow.errors import PlanError
from ddflow.event_time import parse_span
from ddflow.expr import Expr, check_columns, expr_text
from ddflow.plan import TimeBoundJson

__all__ = ["now", "duration", "has_now", "split_now", "conjuncts"]

_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
"""``a OP b`` is ``b FLIP[OP] a``."""


def now() -> Expr:
    """The logical time, for comparisons in ``Collection.filter`` only (a *temporal filter*:
    see :mod:`ddflow.temporal`). An int: milliseconds since the Unix epoch under
    ``flow.run()`` (processing time, or a timestamp ``time_column``)."""
    return Expr("now")


def duration(text: str) -> Expr:
    """A duration literal from a string of fixed units (``"30s"``, ``"5m"``, ``"1h30m"``;
    ``ns us ms s m h d w``), to add to timestamps: ``dd.col("ts") + dd.duration("1h")``."""
    span = parse_span(text, "duration", "dd.duration")
    if span.value % 1000 == 0:
        return Expr("lit", value=span.value // 1000, dtype="duration[us]")
    return Expr("lit", value=span.value, dtype="duration[ns]")


def has_now(expr: Expr) -> bool:
    """Whether ``expr`` reads ``now()``."""
    return any(e.op == "now" for e in expr._walk())


def conjuncts(expr: Expr) -> list[Expr]:
    """The operands of a chain of ``&`` (the expression itself when it is no ``&``)."""
    out: list[Expr] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if e.op == "and":
            stack.extend(reversed(e._args))
        else:
            out.append(e)
    return out


def split_now(
    predicate: Expr, columns: tuple[str, ...] | list[str], label: str
) -> tuple[list[TimeBoundJson], list[TimeBoundJson], Expr | None]:
    """``(lower, upper, rest)`` of a filter predicate that reads ``now()``: the bounds of the
    ``temporal_filter`` node and the other conjuncts (``None`` if there are none), each
    checked against ``columns``; ``PlanError`` naming ``label`` for any other use of
    ``now()``."""
    lower: list[TimeBoundJson] = []
    upper: list[TimeBoundJson] = []
    rest: Expr | None = None
    for part in conjuncts(predicate):
        if not has_now(part):
            rest = part if rest is None else rest & part
            continue
        op, args = part.op, part._args
        bad = op not in _FLIP or not any(a.op == "now" for a in args)
        if not bad and args[0].op == "now":
            other, cmp = args[1], _FLIP[op]  # now OP x is x FLIP[OP] now
        elif not bad:
            other, cmp = args[0], op
        if bad or has_now(other):
            raise PlanError(
                f"{label}: now() may only be one side of a comparison (<, <=, >, >=) with an "
                f"expression free of now(), joined to the rest of the predicate by &; got "
                f"{expr_text(part)} in {expr_text(predicate)}"
            )
        check_columns(other, columns, label)
        # x < now: now > x (lower, strict); x <= now: lower; x > now: now < x (upper,
        # strict); x >= now: now <= x (upper).
        bound: TimeBoundJson = {"expr": other.to_json(), "strict": cmp in ("lt", "gt")}
        (lower if cmp in ("lt", "le") else upper).append(bound)
    if rest is not None:
        check_columns(rest, columns, label)
    return lower, upper, rest
