"""The iterate driver of the Spark backend: runs one iterate scope as supersteps from the
Spark driver. Superstep ``i`` computes the updates at iteration ``i`` of every body operator
for all outer times at once; the loop ends when a superstep feeds nothing back to the
variable (a count, the only value collected to the driver) or at ``max_iterations``.

Each collection is represented per superstep by its delta (its updates at iteration ``i``,
the coordinate implicit); each operator's delta is its rule in the operator registry
(``ops.py``, run by a ``Step``); state lives in ``state.State``, compacted to the current iteration:

* linear operators act on the delta;
* ``join``: ``dA_i x (B_<i + dB_i) + A_<i x dB_i``; a loop-invariant side is partitioned
  once and only the delta is shuffled;
* ``reduce``: ``reduce(A_<=i) - R_<i`` for the keys with new input (``State.reduce_step``);
* the variable: iteration 0 is the entered source, iteration ``i + 1`` the result's
  iteration ``i`` (minus the source at ``i = 0``), the engine's feedback edge;
* ``leave``: the consolidated sum of the result's deltas over all supersteps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame

from ddflow.errors import DataError
from ddflow.plan import (
    AdvanceIterationOp,
    ArrangeOp,
    JoinOp,
    LeaveOp,
    ReduceOp,
    VariableOp,
)
from ddflow.spark.driver import fused
from ddflow.spark.driver.columns import negate_diffs
from ddflow.spark.driver.context import RunContext
from ddflow.spark.driver.held import Held
from ddflow.spark.driver.lineage import consolidated
from ddflow.spark.driver.operators import Operators
from ddflow.spark.driver.ops import SPARK_OPS
from ddflow.spark.driver.state import State
from ddflow.spark.driver.validate import UnsupportedOperatorError
from ddflow.spark.tasks.batches import DIFF

__all__ = ["IterateDriver", "Step"]


@dataclass
class Step:
    """One superstep's computation of the body's deltas (the ``step`` rules of ``ops.py``
    read and fill ``delta``)."""

    ctx: RunContext
    ops: Operators
    state: State
    held: Held
    top: Callable[[int], DataFrame]
    """A top-level node's whole history."""
    i: int
    """The iteration."""
    source: int
    """The loop variable's source (the entered collection)."""
    var_next: DataFrame | None
    """The variable's updates at this iteration (``i > 0``)."""
    lazy: bool = False
    """Build the DataFrames only (no Spark job, no state change, reduces skipped, invariant
    arrangements not partitioned), as the fused path needs them for iteration 0."""
    delta: dict[int, DataFrame | None] = field(default_factory=dict)
    """Every body node's delta at iteration ``i`` computed so far (None: no updates)."""

    def delta_join(self, n: int) -> DataFrame | None:
        """Join ``n``'s delta: ``dA_i x (B_<i + dB_i) + A_<i x dB_i``."""
        a, b = self.ctx.inputs(n)
        da, db = self.delta.get(a), self.delta.get(b)
        acc = self.state.join_acc
        pa_, pb = acc.get(a), acc.get(b)
        terms: list[DataFrame] = []
        cuts = self.state.cuts
        if da is not None:
            rhs = [x for x in (pb, db) if x is not None]
            if rhs:
                right = rhs[0] if len(rhs) == 1 else rhs[0].unionByName(rhs[1])
                fixed = "right" if cuts.is_partitioned(right) else None
                terms.append(self.ops.join(n, da, right, fixed=fixed))
        if db is not None and pa_ is not None:
            fixed = "left" if cuts.is_partitioned(pa_) else None
            # An antijoin's left side (``A_<i``) was added at earlier supersteps.
            terms.append(self.ops.join(n, pa_, db, fixed=fixed, product_only=True))
        if not terms:
            return None
        return functools.reduce(lambda x, y: x.unionByName(y), terms)


@dataclass
class _Body:
    """An iterate scope's body nodes, as every superstep of it needs them."""

    members: list[int]
    variant: set[int]
    """Nodes that change at every iteration (the others only at 0)."""
    join_inputs: set[int]
    source: int


class IterateDriver:
    """Runs iterate scopes as supersteps (each scope once; its leave outputs memoized)."""

    def __init__(
        self, ctx: RunContext, ops: Operators, state: State, top: Callable[[int], DataFrame]
    ) -> None:
        """``top``: a top-level node's whole history (the compiler's, memoized)."""
        self.ctx = ctx
        self.ops = ops
        self.state = state
        self.top = top
        self.scope_out: dict[int, dict[int, DataFrame]] = {}
        self.held = Held(ctx, ops, state.cuts, None)
        """The current scope's updates held by ``advance_iteration``."""

    def run_scope(self, scope: int) -> dict[int, DataFrame]:
        """The leave outputs of ``scope``, by leave node."""
        if scope in self.scope_out:
            return self.scope_out[scope]
        c = self.ctx
        state = self.state
        nodes = c.nodes
        members = sorted(n for n in c.needed if nodes[n]["scope"] == scope)
        variables = [n for n in members if nodes[n]["op"] == VariableOp.OP]
        if len(variables) != 1:
            raise UnsupportedOperatorError(
                f"{c.plan.scopes[scope].label}: expected one iteration variable, found "
                f"{len(variables)}"
            )
        var = variables[0]
        result = int(nodes[var]["result"])
        source = int(nodes[var]["inputs"][0])
        leaves = [
            n
            for n in c.needed
            if nodes[n]["op"] == LeaveOp.OP and nodes[nodes[n]["inputs"][0]]["scope"] == scope
        ]
        max_it = c.plan.scopes[scope].max_iterations
        # Nodes that depend on the variable change at every iteration; the others only at 0
        # (an advance_iteration also releases held updates later).
        variant: set[int] = set()
        for n in members:
            if n == var or nodes[n]["op"] == AdvanceIterationOp.OP:
                variant.add(n)
            elif any(i in variant for i in nodes[n]["inputs"]):
                variant.add(n)
        join_inputs = {
            i for n in members if nodes[n]["op"] == JoinOp.OP for i in nodes[n]["inputs"]
        }
        body = _Body(members, variant, join_inputs, source)
        shape = fused.detect(c, members, variant, var)
        if shape is not None:
            out = self._fused(shape, body, max_it)
            if out is not None:
                state.store.drop_scope(members)
                self.scope_out[scope] = {leave: out for leave in leaves}
                return self.scope_out[scope]
        self._notes(members, variant)
        self.held = Held(c, self.ops, state.cuts, max_it)
        parts: list[DataFrame] = []
        var_next: DataFrame | None = None
        i = 0
        while True:
            holder: dict[str, Any] = {}

            def superstep(
                i: int = i, holder: dict[str, Any] = holder, var_next: DataFrame | None = var_next
            ) -> int | None:
                delta = self._deltas(i, body, var_next)
                res = delta[result]
                counted: int | None = None
                if res is not None and nodes[result]["op"] == ReduceOp.OP:
                    # Consolidated per key partition and cut already; its size was counted
                    # by the job that cut it (no extra job).
                    counted = state.reduce_counts[result]
                elif res is not None:
                    res = state.cuts.cut(consolidated(res))
                if res is not None:
                    parts.append(res)
                if max_it is not None and i + 1 >= max_it:
                    holder["next"] = None
                    holder["went_on"] = False
                    return None
                nxt: DataFrame | None = res
                if i == 0:
                    src = delta[source]
                    assert src is not None
                    neg = negate_diffs(src, DIFF, nodes[var]["label"])
                    fed = neg if res is None else res.unionByName(neg)
                    nxt = state.cuts.cut(consolidated(fed))
                if nxt is None:
                    holder["next"] = None
                    return 0
                count = counted if (i > 0 and counted is not None) else nxt.count()
                holder["next"] = nxt if count else None
                return count

            c.iteration = i
            try:
                if c.meter is not None:
                    c.meter.run(f"superstep {i}", i, superstep)
                else:
                    superstep()
                c.errors.end_superstep(state.cuts.cut)
            finally:
                c.iteration = None
            state.store.after_superstep(i)
            var_next = holder["next"]
            if var_next is not None:
                i += 1
                continue
            # Nothing fed back: the loop is done unless advance_iteration holds updates for
            # a later iteration; the iterations before it change nothing and are skipped.
            release = self.held.next_release() if holder.get("went_on", True) else None
            if release is None or (max_it is not None and release >= max_it):
                break
            i = release
        state.store.drop_scope(members)
        if parts:
            out = consolidated(functools.reduce(lambda a, b: a.unionByName(b), parts))
        else:
            out = self.top(nodes[source]["inputs"][0]).limit(0)
        self.scope_out[scope] = {leave: out for leave in leaves}
        return self.scope_out[scope]

    def _fused(self, shape: fused.Shape, body: _Body, max_it: int | None) -> DataFrame | None:
        """The loop's output by fused supersteps, or None when it does not fuse after all.

        Fused tasks fail on a data error. With ``errors="collect"`` the loop is fused
        optimistically: a data error abandons the fused run (its stored state and the error
        rows kept since it began) and the caller reruns the loop operator by operator, whose
        stages emit error rows. Errors are rare, so a loop without them keeps the fused
        speed."""
        c = self.ctx
        state = self.state
        mark = c.errors.mark()
        c.iteration = 0
        try:
            lazy0 = self._deltas(0, body, None, lazy=True)
        finally:
            c.iteration = None
        try:
            out = fused.run(
                c,
                self.ops,
                state.reduces,
                state.cuts,
                state.store,
                shape,
                lazy0,
                self.top(shape.invariant_top),
                max_it,
            )
        except DataError:
            if not c.collect:
                raise
            c.errors.rollback(mark)
            state.store.drop_scope(body.members)
            c.note(
                shape.reduce,
                "fused supersteps met a data error; the loop ran again operator by operator "
                "to collect it",
            )
            return None
        if out is None:
            c.errors.rollback(mark)
        else:
            c.errors.end_superstep(state.cuts.cut)
        return out

    def _notes(self, members: list[int], variant: set[int]) -> None:
        c = self.ctx
        for n in members:
            op = c.nodes[n]["op"]
            if op == ReduceOp.OP:
                if c.reduce_state == "store":
                    how = (
                        "per superstep: repartition(key) of the new input only, engine "
                        "reduce operator in mapInArrow on keys with new input, state read "
                        "and written by the tasks in the reduce state store"
                    )
                else:
                    how = (
                        "per superstep: repartition(key) of new input + state, engine "
                        "reduce operator in mapInArrow on keys with new input, state "
                        "checkpointed"
                    )
                c.note(n, how)
            elif op == JoinOp.OP:
                sides = [("invariant" if i not in variant else "variant") for i in c.inputs(n)]
                c.note(
                    n,
                    f"per superstep delta join (sides {sides[0]}, {sides[1]}): Spark "
                    f"equi-join, time = greatest, diff = product",
                )

    def _deltas(
        self, i: int, body: _Body, var_next: DataFrame | None, lazy: bool = False
    ) -> dict[int, DataFrame | None]:
        """Every body node's delta at iteration ``i`` (None: no updates), each by its
        operator's ``step`` rule; advances the join accumulations (unless ``lazy``, see
        ``Step.lazy``)."""
        c = self.ctx
        state = self.state
        step = Step(c, self.ops, state, self.held, self.top, i, body.source, var_next, lazy)
        delta = step.delta
        for n in body.members:
            node = c.nodes[n]
            if n not in body.variant and i > 0:
                delta[n] = None
                continue
            rule = SPARK_OPS[node["op"]].step
            if rule is None:
                raise UnsupportedOperatorError(
                    f"{node['label']}: operator {node['op']!r} is not supported inside an "
                    f"iterate by the Spark backend"
                )
            delta[n] = rule(step, n)
            if node["op"] == ArrangeOp.OP and n in body.join_inputs and n not in body.variant:
                d = delta[n]
                if d is not None and not lazy:
                    delta[n] = state.partitioned(d, n)
        if lazy:
            return delta
        # State for the next superstep, compacted to this iteration.
        for n in body.join_inputs:
            d = delta.get(n)
            if d is None:
                continue
            if n not in body.variant:
                state.join_acc[n] = d
            elif self._needs_acc(n, body.variant):
                state.accumulate(n, d)
        return delta

    def _needs_acc(self, n: int, variant: set[int]) -> bool:
        """Whether a variant arrangement's accumulation is read: it joins a variant side."""
        c = self.ctx
        for m in c.needed:
            node = c.nodes[m]
            if node["op"] == JoinOp.OP and n in node["inputs"]:
                other = [x for x in node["inputs"] if x != n]
                if not other or other[0] in variant:
                    return True
        return False
