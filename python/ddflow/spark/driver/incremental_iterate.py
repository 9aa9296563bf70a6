"""An iterate scope in an incremental Spark run (``incremental.py``): supersteps that compute,
for every body node, its new updates at iteration ``i`` from this run's new updates and the
stored histories of earlier runs, which keep the iteration of every update (``_i``).

With ``X`` a stored history, ``dX`` this run's updates, ``_i`` / ``_<i`` / ``_<=i`` the
updates at, before and up to iteration ``i``:

* ``join``: ``dA_i x (B + dB)_<=i + dA_<i x (B + dB)_i + A_i x dB_<i + A_<=i x dB_i`` (the
  terms of ``(A + dA) x (B + dB) - A x B`` at iteration ``i``); a loop-invariant side has
  updates at iteration 0 only, and its stored plus new history is partitioned once;
* ``reduce``: its output at iteration ``i`` accumulates ``reduce(X_<=i)``, so for the keys
  whose input changed up to ``i`` and has updates at ``i`` (new or stored), the new output
  is ``reduce((X + dX)_<=i)`` minus the stored output up to ``i`` minus this run's earlier
  output deltas;
* the variable: iteration 0 is the entered source's delta, iteration ``i + 1`` the result's
  delta at ``i`` (minus the source's at ``i = 0``);
* ``leave``: the sum of the result's deltas.

The supersteps go on while the variable changes, and at least as far as any earlier run
went (old updates at a later iteration can meet this run's new ones).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ddflow.plan import (
    AdvanceIterationOp,
    ConcatOp,
    EnterArrangementOp,
    EnterOp,
    JoinOp,
    ReduceOp,
    VariableOp,
)
from ddflow.spark.driver.columns import negate_diffs
from ddflow.spark.driver.delta_frames import Iterations, semi_on_keys, union_all
from ddflow.spark.driver.iterate_scope import IterateScope
from ddflow.spark.driver.lineage import consolidated
from ddflow.spark.driver.ops import SPARK_OPS
from ddflow.spark.driver.stored_state import ITER
from ddflow.spark.driver.validate import UnsupportedOperatorError
from ddflow.spark.tasks.batches import DIFF, ccol

if TYPE_CHECKING:
    from ddflow.spark.driver.incremental import Continuation

__all__ = ["IterateContinuation"]


class IterateContinuation:
    """One iterate scope of an incremental run."""

    def __init__(self, cont: Continuation, scope: int) -> None:
        self.cont = cont
        ctx = self.ctx = cont.ctx
        nodes = ctx.nodes
        shape = IterateScope.of(ctx, scope)
        self.members = shape.members
        for n in self.members:
            if nodes[n]["op"] == AdvanceIterationOp.OP:
                raise UnsupportedOperatorError(
                    f"{ctx.label(n)}: advance_iteration is not supported by incremental Spark "
                    f"runs yet (run without state=)"
                )
        self.scope = scope
        self.var = shape.var
        self.result = shape.result
        self.source = shape.source
        self.leaves = shape.leaves
        self.max_it = shape.max_it
        self.variant = shape.variant
        prior = cont.prior
        self.old_steps = prior.supersteps.get(scope, 0) if prior is not None else 0
        self.hist = {n: cont.history(n) for n in self.members if n in cont.stored}
        self.acc: dict[int, DataFrame] = {}
        """Per stored node: this run's deltas at the iterations before the current one, as
        one frame of ``ctx.partitions`` partitions whose lineage is cut once per superstep
        (``_accumulate``)."""
        self.invariant_full: dict[int, DataFrame] = {}
        """Per loop-invariant join input: its stored and new history, partitioned by key."""
        self.layers: dict[int, list[DataFrame]] = {}
        self.results: list[DataFrame] = []
        """The result's new updates, one frame per superstep."""
        self.var_next: DataFrame | None = None
        """The variable's new updates at the next iteration (None: none)."""

    def old(self, n: int, its: Iterations) -> DataFrame | None:
        """Stored node ``n``'s updates at iterations ``its`` (None: none). A loop-invariant
        node has updates at iteration 0 only."""
        h = self.hist.get(n)
        if h is None or (n not in self.variant and not its.has_zero):
            return None
        return h.where(its.where(F.col(ITER))).drop(ITER)

    def run(self) -> dict[int, DataFrame | None]:
        """The leave nodes' new updates."""
        cont, ctx = self.cont, self.ctx
        i = 0
        steps = 0
        while True:
            ctx.iteration = i
            try:
                meter = ctx.meter
                if meter is not None:
                    meter.run(f"superstep {i}", i, functools.partial(self._superstep, i))
                else:
                    self._superstep(i)
            finally:
                ctx.iteration = None
            steps = i + 1
            if self.max_it is not None and i + 1 >= self.max_it:
                break
            if self.var_next is None and i + 1 >= self.old_steps:
                break
            i += 1
        cont.supersteps[self.scope] = steps
        for n, parts in self.layers.items():
            layer = parts[0]
            for p in parts[1:]:
                layer = layer.unionByName(p)
            cont.layers[n] = layer
        results = union_all(self.results)
        if results is not None:
            out = consolidated(results)
        else:
            src = cont.delta(ctx.inputs(self.source)[0])
            assert src is not None
            out = src.limit(0)
        ctx.note(
            self.result,
            "incremental supersteps: new updates at each iteration against the stored "
            "histories with their iterations",
        )
        return {leave: out for leave in self.leaves}

    def _superstep(self, i: int) -> int:
        """Superstep ``i``: every body node's new updates; the variable's for ``i + 1``
        (``self.var_next``). Returns how many updates that is."""
        cont = self.cont
        delta = self._deltas(i, self.var_next)
        res = delta.get(self.result)
        if res is not None and self.result not in cont.stored:
            res = cont.cuts.cut_lazy(consolidated(res))
        if res is not None:
            self.results.append(res)
        fed = res
        if i == 0:
            src = delta[self.source]
            neg = None if src is None else negate_diffs(src, DIFF, self.ctx.label(self.var))
            both = union_all([res, neg])
            fed = None if both is None else cont.cuts.cut_lazy(consolidated(both))
        count = 0 if fed is None else fed.count()
        self.var_next = fed if count else None
        return count

    def _deltas(self, i: int, var_next: DataFrame | None) -> dict[int, DataFrame | None]:
        """Every body node's new updates at iteration ``i``."""
        cont, ctx = self.cont, self.ctx
        delta: dict[int, DataFrame | None] = {}
        for n in self.members:
            node = ctx.nodes[n]
            op = node["op"]
            d: DataFrame | None
            if n not in self.variant and i > 0:
                delta[n] = None
                continue
            if op in (EnterOp.OP, EnterArrangementOp.OP):
                d = cont.delta(ctx.inputs(n)[0]) if i == 0 else None
            elif op == VariableOp.OP:
                d = delta[self.source] if i == 0 else var_next
            elif op == ConcatOp.OP:
                present = [x for x in (delta[m] for m in ctx.inputs(n)) if x is not None]
                d = cont.ops.union(n, present) if present else None
            elif op == JoinOp.OP:
                d = self._join(n, i, delta)
            elif op == ReduceOp.OP:
                d = self._reduce(n, i, delta)
            elif SPARK_OPS[op].linear is not None:
                rule = SPARK_OPS[op].linear
                assert rule is not None
                src = delta[ctx.inputs(n)[0]]
                d = None if src is None else rule(cont.ops, n, src, i == 0)
            else:
                raise UnsupportedOperatorError(
                    f"{ctx.label(n)}: operator {op!r} is not supported inside an iterate by "
                    f"incremental Spark runs"
                )
            if d is not None and n in cont.stored:
                d = cont.cuts.cut_lazy(d)
                self.layers.setdefault(n, []).append(d.withColumn(ITER, F.lit(i)))
            delta[n] = d
        for n in self.members:
            d = delta.get(n)
            if d is not None and n in cont.stored:
                self._accumulate(n, d)
        return delta

    def _accumulate(self, n: int, d: DataFrame) -> None:
        """Adds superstep delta ``d`` (cut) to stored node ``n``'s accumulated deltas: the
        union of the frame accumulated so far (cut) and ``d``, coalesced to
        ``ctx.partitions`` partitions and cut when the next superstep's job first computes
        it. Every later superstep reads that one frame, so its jobs neither re-derive nor
        re-scan a union of all earlier supersteps' frames (whose tasks grew by
        ``ctx.partitions`` per superstep)."""
        before = self.acc.get(n)
        if before is None:
            self.acc[n] = d
            return
        both = before.unionByName(d).coalesce(self.ctx.partitions)
        self.acc[n] = self.cont.cuts.cut_lazy(both)

    def _acc(self, n: int) -> DataFrame | None:
        """Stored node ``n``'s new updates at the iterations before the current one."""
        return self.acc.get(n)

    def _join(self, n: int, i: int, delta: dict[int, DataFrame | None]) -> DataFrame | None:
        cont = self.cont
        a, b = self.ctx.inputs(n)
        da, db = delta[a], delta[b]
        a_lt, b_lt = self._acc(a), self._acc(b)
        terms: list[DataFrame] = []
        if self.ctx.nodes[n]["kind"] == "antijoin" and da is not None:
            terms.append(da)

        def join(left: DataFrame, right: DataFrame) -> None:
            fixed = "right" if cont.cuts.is_partitioned(right) else None
            terms.append(cont.ops.join(n, left, right, fixed=fixed, product_only=True))

        small = cont.small_side
        if da is not None:
            if b not in self.variant:
                join(small(da), self._invariant(n, b, db, b_lt))
            else:
                right = union_all([self.old(b, _upto(i)), b_lt, db])
                if right is not None:
                    join(small(da), right)
        if a_lt is not None:
            right_i = union_all([self.old(b, _at(i)), db])
            if right_i is not None:
                join(small(a_lt), right_i)
        if b_lt is not None:
            left_i = self.old(a, _at(i))
            if left_i is not None:
                join(left_i, small(b_lt))
        if db is not None:
            left_upto = self.old(a, _upto(i))
            if left_upto is not None:
                join(left_upto, small(db))
        if not terms:
            return None
        return consolidated(union_all(terms))  # type: ignore[arg-type]

    def _invariant(self, n: int, b: int, db: DataFrame | None, b_lt: DataFrame | None) -> DataFrame:
        """Loop-invariant join input ``b``: stored plus new history, partitioned once."""
        if b not in self.invariant_full:
            both = union_all([self.old(b, _upto(0)), db, b_lt])
            if both is None:
                src = self.cont.delta(self.ctx.inputs(b)[0])
                assert src is not None
                both = src.limit(0)
            if self.cont.small:
                # Scanned where this run's small deltas are broadcast to it.
                self.invariant_full[b] = self.cont.cuts.cut_lazy(both)
            else:
                self.invariant_full[b] = self.cont.cuts.partitioned(
                    both, self.ctx.key_len(b), self.ctx.partitions
                )
        return self.invariant_full[b]

    def _reduce(self, n: int, i: int, delta: dict[int, DataFrame | None]) -> DataFrame | None:
        cont, ctx = self.cont, self.ctx
        x = ctx.inputs(n)[0]
        k = ctx.key_len(x)
        keys = [ccol(j) for j in range(k)]
        dx, dx_lt = delta[x], self._acc(x)
        keysets: list[DataFrame] = []
        if dx is not None:
            keysets.append(dx.select(*keys))
        old_i = self.old(x, _at(i))
        if dx_lt is not None and old_i is not None:
            lt_keys = cont.small_side(dx_lt.select(*keys))
            keysets.append(semi_on_keys(old_i.select(*keys), lt_keys, k))
        if not keysets:
            return None
        touched = cont.small_side(
            cont.cuts.cut_lazy(union_all(keysets).distinct())  # type: ignore[union-attr]
        )
        upto = union_all([self.old(x, _upto(i)), dx_lt, dx])
        assert upto is not None
        full = cont.recompute(n, semi_on_keys(upto, touched, k))
        parts = [full]
        for before in (self.old(n, _upto(i)), self._acc(n)):
            if before is not None:
                parts.append(negate_diffs(semi_on_keys(before, touched, k), DIFF, ctx.label(n)))
        return consolidated(union_all(parts))  # type: ignore[arg-type]


def _at(i: int) -> Iterations:
    return Iterations(i, upto=False)


def _upto(i: int) -> Iterations:
    return Iterations(i, upto=True)
