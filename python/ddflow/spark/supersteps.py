"""The iterate driver of the Spark backend: runs one iterate scope as supersteps from the
Spark driver. Superstep ``i`` computes the updates at iteration ``i`` of every body operator
for all outer times at once; the loop ends when a superstep feeds nothing back to the
variable (a count, the only value collected to the driver) or at ``max_iterations``.

Each collection is represented per superstep by its delta (its updates at iteration ``i``,
the coordinate implicit); state lives in ``state.State``, compacted to the current iteration:

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
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame

from ddflow.errors import DataError
from ddflow.spark import fused
from ddflow.spark.columns import negate_diffs
from ddflow.spark.held import Held
from ddflow.spark.schemas import DIFF
from ddflow.spark.state import consolidate
from ddflow.spark.validate import UnsupportedOperatorError

if TYPE_CHECKING:
    from ddflow.spark.compiler import Compiler

__all__ = ["IterateDriver"]


class IterateDriver:
    """Runs iterate scopes as supersteps (each scope once; its leave outputs memoized)."""

    def __init__(self, compiler: Compiler) -> None:
        self.c = compiler
        self.scope_out: dict[int, dict[int, DataFrame]] = {}
        self.held = Held(compiler, None)
        """The current scope's updates held by ``advance_iteration``."""

    def run_scope(self, scope: int) -> dict[int, DataFrame]:
        """The leave outputs of ``scope``, by leave node."""
        if scope in self.scope_out:
            return self.scope_out[scope]
        c = self.c
        nodes = c.nodes
        members = sorted(n for n in c.needed if nodes[n]["scope"] == scope)
        variables = [n for n in members if nodes[n]["op"] == "variable"]
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
            if nodes[n]["op"] == "leave" and nodes[nodes[n]["inputs"][0]]["scope"] == scope
        ]
        max_it = c.plan.scopes[scope].max_iterations
        # Nodes that depend on the variable change at every iteration; the others only at 0
        # (an advance_iteration also releases held updates later).
        variant: set[int] = set()
        for n in members:
            if n == var or nodes[n]["op"] == "advance_iteration":
                variant.add(n)
            elif any(i in variant for i in nodes[n]["inputs"]):
                variant.add(n)
        join_inputs = {i for n in members if nodes[n]["op"] == "join" for i in nodes[n]["inputs"]}
        shape = fused.detect(c, members, variant, var)
        if shape is not None:
            out = self._fused(shape, members, variant, join_inputs, source, max_it)
            if out is not None:
                c.state.drop_scope(members)
                self.scope_out[scope] = {leave: out for leave in leaves}
                return self.scope_out[scope]
        self._notes(members, variant)
        self.held = Held(c, max_it)
        parts: list[DataFrame] = []
        var_next: DataFrame | None = None
        i = 0
        while True:
            holder: dict[str, Any] = {}

            def superstep(
                i: int = i, holder: dict[str, Any] = holder, var_next: DataFrame | None = var_next
            ) -> int | None:
                delta = self._deltas(i, members, variant, join_inputs, source, var_next)
                res = delta[result]
                counted: int | None = None
                if res is not None and nodes[result]["op"] == "reduce":
                    # Consolidated per key partition and cut already; its size was counted
                    # by the reduce's tasks (no extra job).
                    counted = int(c.state.reduce_counts[result].value)
                elif res is not None:
                    res = c.state.cut(consolidate(res))
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
                    nxt = c.state.cut(consolidate(neg if res is None else res.unionByName(neg)))
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
                c.errors.end_superstep(c.state.cut)
            finally:
                c.iteration = None
            c.state.after_superstep(i)
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
        c.state.drop_scope(members)
        if parts:
            out = consolidate(functools.reduce(lambda a, b: a.unionByName(b), parts))
        else:
            out = c.top(nodes[source]["inputs"][0]).limit(0)
        self.scope_out[scope] = {leave: out for leave in leaves}
        return self.scope_out[scope]

    def _fused(
        self,
        shape: fused.Shape,
        members: list[int],
        variant: set[int],
        join_inputs: set[int],
        source: int,
        max_it: int | None,
    ) -> DataFrame | None:
        """The loop's output by fused supersteps, or None when it does not fuse after all.

        Fused tasks fail on a data error. With ``errors="collect"`` the loop is fused
        optimistically: a data error abandons the fused run (its stored state and the error
        rows kept since it began) and the caller reruns the loop operator by operator, whose
        stages emit error rows. Errors are rare, so a loop without them keeps the fused
        speed."""
        c = self.c
        mark = c.errors.mark()
        c.iteration = 0
        try:
            lazy0 = self._deltas(0, members, variant, join_inputs, source, None, lazy=True)
        finally:
            c.iteration = None
        try:
            out = fused.run(c, shape, lazy0, max_it)
        except DataError:
            if not c.collect:
                raise
            c.errors.rollback(mark)
            c.state.drop_scope(members)
            c.note(
                shape.reduce,
                "fused supersteps met a data error; the loop ran again operator by operator "
                "to collect it",
            )
            return None
        if out is None:
            c.errors.rollback(mark)
        else:
            c.errors.end_superstep(c.state.cut)
        return out

    def _notes(self, members: list[int], variant: set[int]) -> None:
        c = self.c
        for n in members:
            op = c.nodes[n]["op"]
            if op == "reduce":
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
            elif op == "join":
                sides = [
                    ("invariant" if i not in variant else "variant") for i in c.nodes[n]["inputs"]
                ]
                c.note(
                    n,
                    f"per superstep delta join (sides {sides[0]}, {sides[1]}): Spark "
                    f"equi-join, time = greatest, diff = product",
                )

    def _deltas(
        self,
        i: int,
        members: list[int],
        variant: set[int],
        join_inputs: set[int],
        source: int,
        var_next: DataFrame | None,
        lazy: bool = False,
    ) -> dict[int, DataFrame | None]:
        """Every body node's delta at iteration ``i`` (None: no updates); advances the join
        accumulations. ``lazy``: build the DataFrames only (no Spark job, no state change,
        reduces skipped, invariant arrangements not partitioned), as the fused path needs
        them for iteration 0."""
        c = self.c
        state = c.state
        delta: dict[int, DataFrame | None] = {}
        for n in members:
            node = c.nodes[n]
            op = node["op"]
            ins = node["inputs"]
            if n not in variant and i > 0:
                delta[n] = None
                continue
            if op == "enter":
                delta[n] = c.top(ins[0])
            elif op == "enter_arrangement":
                delta[n] = c.top(ins[0]) if lazy else state.invariant_arrangement(ins[0])
            elif op == "variable":
                delta[n] = delta[source] if i == 0 else var_next
            elif op == "concat":
                present = [delta[x] for x in ins if delta[x] is not None]
                delta[n] = c.union(n, present) if present else None  # type: ignore[arg-type]
            elif op == "join":
                delta[n] = self._delta_join(n, delta)
            elif op == "reduce":
                delta[n] = None if lazy else state.reduce_step(n, delta.get(ins[0]), i)
            elif op == "advance_iteration":
                delta[n] = self.held.step(n, delta[ins[0]], i)
            elif op == "leave":
                continue
            else:
                d = delta[ins[0]]
                delta[n] = None if d is None else c.linear(n, d, note=i == 0)
            if op == "arrange" and n in join_inputs and n not in variant and not lazy:
                d = delta[n]
                if d is not None:
                    delta[n] = state.partitioned(d, n)
        if lazy:
            return delta
        # State for the next superstep, compacted to this iteration.
        for n in join_inputs:
            d = delta.get(n)
            if d is None:
                continue
            if n not in variant:
                state.join_acc[n] = d
            elif self._needs_acc(n, variant):
                state.accumulate(n, d)
        return delta

    def _needs_acc(self, n: int, variant: set[int]) -> bool:
        """Whether a variant arrangement's accumulation is read: it joins a variant side."""
        c = self.c
        for m in c.needed:
            node = c.nodes[m]
            if node["op"] == "join" and n in node["inputs"]:
                other = [x for x in node["inputs"] if x != n]
                if not other or other[0] in variant:
                    return True
        return False

    def _delta_join(self, n: int, delta: dict[int, DataFrame | None]) -> DataFrame | None:
        c = self.c
        a, b = c.nodes[n]["inputs"]
        da, db = delta.get(a), delta.get(b)
        acc = c.state.join_acc
        pa_, pb = acc.get(a), acc.get(b)
        terms: list[DataFrame] = []
        fixed = c.state.fixed
        if da is not None:
            rhs = [x for x in (pb, db) if x is not None]
            if rhs:
                right = rhs[0] if len(rhs) == 1 else rhs[0].unionByName(rhs[1])
                terms.append(c.join(n, da, right, fixed="right" if id(right) in fixed else None))
        if db is not None and pa_ is not None:
            terms.append(c.join(n, pa_, db, fixed="left" if id(pa_) in fixed else None))
        if not terms:
            return None
        return functools.reduce(lambda x, y: x.unionByName(y), terms)
