"""The Spark backend's operator registry: one entry per plan operator (``ddflow.plan``'s
``OpSpec`` classes, keyed by their ``OP``) saying how it runs on Spark or why it is refused.

An entry gives the text ``explain_spark`` shows (at the top level and inside an iterate),
the rule that compiles the operator's whole history at the top level (``top``), the rule
that computes its delta at one superstep inside an iterate (``step``; an operator without
one is not allowed inside an iterate), and for the operators that act on one input the same
way on a history and on a delta, the ``Operators`` method doing it (``linear``). Validation
(``validate.check_ops``), the compiler, the iterate driver and ``explain_spark`` all look
operators up here. Importing this module starts no Spark session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from ddflow.plan import (
    AdvanceIterationOp,
    ArrangeOp,
    CaptureOp,
    ConcatOp,
    ConsolidateOp,
    ConstantOp,
    DelayOp,
    EnterArrangementOp,
    EnterOp,
    FilterOp,
    FilterPyOp,
    FlatMapPyOp,
    ImportTraceOp,
    InputOp,
    InspectPyOp,
    JoinOp,
    LeaveOp,
    MapPyOp,
    NegateOp,
    OpSpec,
    ProbeOp,
    ReduceOp,
    ScaleOp,
    SelectOp,
    TemporalFilterOp,
    VariableOp,
    WatermarkOp,
)
from ddflow.spark.driver.constant_frames import constant_frame
from ddflow.spark.driver.lineage import consolidated
from ddflow.spark.driver.operators import Operators

if TYPE_CHECKING:
    from ddflow.spark.driver.compiler import Compiler
    from ddflow.spark.driver.supersteps import Step

__all__ = ["SparkOp", "SPARK_OPS", "supported_ops"]

TopRule = Callable[["Compiler", int], DataFrame]
"""Node ``n``'s whole history at the top level."""
StepRule = Callable[["Step", int], "DataFrame | None"]
"""Node ``n``'s delta at one superstep (None: no updates)."""
LinearRule = Callable[[Operators, int, DataFrame, bool], DataFrame]
"""An ``Operators`` method: node ``n``'s input frame (history or delta) to its output;
the flag says whether to note how it was compiled."""


@dataclass(frozen=True)
class SparkOp:
    """How one plan operator runs on Spark, or why the Spark backend refuses it."""

    spec: type[OpSpec]
    """The plan operator."""
    explain: str = ""
    """How it runs at the top level (``explain_spark``)."""
    explain_in_iterate: str = ""
    """How it runs inside an iterate, when that differs."""
    top: TopRule | None = None
    """Compiles its whole history at the top level (None: only inside an iterate)."""
    step: StepRule | None = None
    """Computes its delta at one superstep (None: not allowed inside an iterate)."""
    linear: LinearRule | None = None
    """For an operator on one input that acts the same on a history and on a delta: the
    ``Operators`` method running it."""
    refused: str = ""
    """Why the Spark backend does not run it (empty: it does)."""

    @property
    def op(self) -> str:
        """The operator's name in the plan."""
        return self.spec.OP

    @property
    def supported(self) -> bool:
        """Whether the Spark backend runs it."""
        return not self.refused

    @property
    def in_iterate(self) -> bool:
        """Whether it may appear inside an iterate body."""
        return self.step is not None

    def how(self, in_iterate: bool) -> str:
        """The ``explain_spark`` text of a node at the top level or inside an iterate."""
        return (self.explain_in_iterate or self.explain) if in_iterate else self.explain


# -- top-level rules ---------------------------------------------------------------------------


def _top_input(c: Compiler, n: int) -> DataFrame:
    return c.frames[n]


def _top_constant(c: Compiler, n: int) -> DataFrame:
    return constant_frame(c.ctx.spark, c.ctx.nodes[n], c.ctx.dims)


def _linear_rule(n: int, op: str) -> LinearRule:
    rule = SPARK_OPS[op].linear
    assert rule is not None, f"#{n} {op} is not a linear operator"
    return rule


def _top_linear(c: Compiler, n: int) -> DataFrame:
    rule = _linear_rule(n, c.ctx.nodes[n]["op"])
    return rule(c.ops, n, c.top(c.ctx.inputs(n)[0]), True)


def _top_concat(c: Compiler, n: int) -> DataFrame:
    return c.ops.union(n, [c.top(i) for i in c.ctx.inputs(n)])


def _top_join(c: Compiler, n: int) -> DataFrame:
    a, b = c.ctx.inputs(n)
    df = consolidated(c.ops.join(n, c.top(a), c.top(b)))
    c.ctx.note(
        n,
        "Spark equi-join on the key, time = greatest, diff = product; consolidated "
        "(groupBy(record, time).sum(diff) on the join's key partitioning)",
    )
    return df


def _top_reduce(c: Compiler, n: int) -> DataFrame:
    return c.reduce(n)


def _top_leave(c: Compiler, n: int) -> DataFrame:
    return c.leave(n)


# -- superstep rules ---------------------------------------------------------------------------


def _step_linear(s: Step, n: int) -> DataFrame | None:
    d = s.delta[s.ctx.inputs(n)[0]]
    return None if d is None else _linear_rule(n, s.ctx.nodes[n]["op"])(s.ops, n, d, s.i == 0)


def _step_enter(s: Step, n: int) -> DataFrame | None:
    return s.top(s.ctx.inputs(n)[0])


def _step_enter_arrangement(s: Step, n: int) -> DataFrame | None:
    src = s.ctx.inputs(n)[0]
    if s.lazy:
        return s.top(src)
    return s.state.invariant_arrangement(src, s.top)


def _step_variable(s: Step, n: int) -> DataFrame | None:
    return s.delta[s.source] if s.i == 0 else s.var_next


def _step_concat(s: Step, n: int) -> DataFrame | None:
    present = [d for d in (s.delta[x] for x in s.ctx.inputs(n)) if d is not None]
    return s.ops.union(n, present) if present else None


def _step_join(s: Step, n: int) -> DataFrame | None:
    return s.delta_join(n)


def _step_reduce(s: Step, n: int) -> DataFrame | None:
    if s.lazy:
        return None
    return s.state.reduce_step(n, s.delta.get(s.ctx.inputs(n)[0]), s.i)


def _step_advance_iteration(s: Step, n: int) -> DataFrame | None:
    return s.held.step(n, s.delta[s.ctx.inputs(n)[0]], s.i)


def _linear(spec: type[OpSpec], method: LinearRule, explain: str) -> SparkOp:
    """An operator on one input acting the same on a history and on a delta."""
    return SparkOp(spec, explain, top=_top_linear, step=_step_linear, linear=method)


def _refused(spec: type[OpSpec], why: str) -> SparkOp:
    return SparkOp(spec, refused=why)


_EXPRESSIONS = "Spark Column expressions (Rust evaluator in mapInArrow where inexact)"
_PYTHON = "Python batch function in mapInArrow"

_ENTRIES = (
    SparkOp(InputOp, "DataFrame, validated and renamed", top=_top_input),
    SparkOp(ConstantOp, "createDataFrame of its rows at time 0", top=_top_constant),
    _linear(SelectOp, Operators.expressions, _EXPRESSIONS),
    _linear(
        FilterOp,
        Operators.expressions,
        "Spark Column predicate (Rust evaluator in mapInArrow where inexact)",
    ),
    _linear(MapPyOp, Operators.python_fn, _PYTHON),
    _linear(FilterPyOp, Operators.python_fn, _PYTHON),
    _linear(FlatMapPyOp, Operators.python_fn, _PYTHON),
    SparkOp(ConcatOp, "unionByName", top=_top_concat, step=_step_concat),
    _linear(NegateOp, Operators.negate, "diff = -diff"),
    _linear(ScaleOp, Operators.scale, "diff = diff * factor (overflow raises)"),
    _linear(ConsolidateOp, Operators.consolidation, "groupBy(record, time).sum(diff)"),
    _linear(
        ArrangeOp, Operators.arranged, "columns ordered key first (partitioned by the consumer)"
    ),
    SparkOp(
        JoinOp,
        "Spark equi-join, time = greatest, diff = product",
        "Spark equi-join, time = greatest, diff = product (per superstep: delta rule)",
        top=_top_join,
        step=_step_join,
    ),
    SparkOp(
        ReduceOp,
        "repartition(key) + the engine's reduce operator in mapInArrow",
        "repartition(key) + the engine's reduce operator in mapInArrow (per superstep, on "
        "keys with new input; state in the reduce state store)",
        top=_top_reduce,
        step=_step_reduce,
    ),
    SparkOp(EnterOp, "iteration 0 only", step=_step_enter),
    SparkOp(
        EnterArrangementOp,
        "loop-invariant: partitioned by key and checkpointed once",
        step=_step_enter_arrangement,
    ),
    SparkOp(
        VariableOp,
        "iteration 0: source; i+1: result at i (minus source at 0)",
        step=_step_variable,
    ),
    SparkOp(LeaveOp, "sum of the result's deltas over all supersteps", top=_top_leave),
    SparkOp(
        AdvanceIterationOp,
        "updates beyond the superstep held (checkpointed) until their iteration; empty "
        "iterations skipped",
        step=_step_advance_iteration,
    ),
    _linear(DelayOp, Operators.identity, "identity (a superstep bundles each iteration's updates)"),
    _refused(
        InspectPyOp,
        "an inspect callback sees batches as the embedded engine produces them, which a run "
        "over whole histories does not reproduce; inspect the output DataFrames instead",
    ),
    _refused(
        ImportTraceOp,
        "an imported trace lives in another embedded engine's memory, which Spark executors "
        "cannot read; run that dataflow's output as an input DataFrame instead",
    ),
    _refused(
        CaptureOp,
        "a capture is an output, not a stage: pass the capture (or its collection) in "
        "run_on_spark's outputs",
    ),
    _refused(
        WatermarkOp,
        "a watermark decides lateness time by time, in order; a run over whole histories "
        "has no such order yet: run event-time windows on the embedded engine",
    ),
    _refused(
        TemporalFilterOp,
        "now() retracts each row at the logical time its interval closes, held until the "
        "frontier passes it; a run over whole histories does not hold updates for later "
        "times yet: run temporal filters on the embedded engine",
    ),
    _refused(
        ProbeOp,
        "a probe answers frontier questions of a running dataflow; a Spark run returns "
        "complete histories, so there is no frontier to probe",
    ),
)

SPARK_OPS: Mapping[str, SparkOp] = {entry.op: entry for entry in _ENTRIES}
"""Every plan operator, by its ``OP``: how it runs on Spark, or why it is refused."""


def supported_ops() -> list[str]:
    """The names of the operators the Spark backend runs, sorted."""
    return sorted(op for op, entry in SPARK_OPS.items() if entry.supported)
