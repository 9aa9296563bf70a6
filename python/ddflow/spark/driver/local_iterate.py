"""An iterate scope in a small incremental run on the driver (``local_continuation.py``):
the supersteps of ``incremental_iterate.py`` (its docstring gives the equations) on Arrow
tables. A stored history is read one iteration at a time (its ``_i=`` directories) and
filtered by the keys a term meets, so a superstep's cost follows the keys this run touches
at that iteration, not the size of the stored state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ddflow.plan import (
    ConcatOp,
    EnterArrangementOp,
    EnterOp,
    JoinOp,
    LeaveOp,
    ReduceOp,
    VariableOp,
)
from ddflow.spark.driver import local_frames as lf
from ddflow.spark.driver.iterate_scope import IterateScope
from ddflow.spark.driver.stored_state import ITER

if TYPE_CHECKING:
    from ddflow.spark.driver.local_continuation import LocalContinuation

__all__ = ["LocalIterate"]


class LocalIterate:
    """One iterate scope of a small incremental run."""

    def __init__(self, cont: LocalContinuation, scope: int) -> None:
        self.cont = cont
        ctx = self.ctx = cont.ctx
        shape = IterateScope.of(ctx, scope)
        self.members = shape.members
        self.scope = scope
        self.var = shape.var
        self.result = shape.result
        self.source = shape.source
        self.leaves = shape.leaves
        self.max_it = shape.max_it
        self.variant = shape.variant
        self.old_steps = cont.prior.supersteps.get(scope, 0)
        self.acc: dict[int, pa.Table | None] = {}
        """Per stored node: this run's updates at the iterations before the current one."""
        self.invariant_full: dict[int, pa.Table | None] = {}
        self.layers: dict[int, list[pa.Table]] = {}
        self.results: list[pa.Table | None] = []
        self.var_next: pa.Table | None = None

    def at(self, n: int, i: int) -> pa.Table | None:
        """Stored node ``n``'s updates at iteration ``i`` (a loop-invariant node has updates
        at iteration 0 only)."""
        if n not in self.cont.stored or (n not in self.variant and i > 0):
            return None
        return self.cont.hist.at(n, i)

    def upto(self, n: int, i: int, keys: pa.Table | None, k: int) -> pa.Table | None:
        """Stored node ``n``'s updates at iterations ``0..i`` whose keys are in ``keys``
        (all of them when ``keys`` is None)."""
        top = i if n in self.variant else 0
        parts = [self.at(n, j) for j in range(top + 1)]
        if keys is None:
            return lf.concat(parts)
        return lf.concat([lf.semi(p, keys, k) for p in parts])

    def run(self) -> dict[int, pa.Table | None]:
        """The leave nodes' new updates."""
        i = 0
        steps = 0
        meter = self.ctx.meter
        while True:
            if meter is not None:
                meter.run(f"superstep {i} (driver)", i, lambda i=i: self._superstep(i))  # type: ignore[misc]
            else:
                self._superstep(i)
            steps = i + 1
            if self.max_it is not None and i + 1 >= self.max_it:
                break
            if self.var_next is None and i + 1 >= self.old_steps:
                break
            i += 1
        self.cont.supersteps[self.scope] = steps
        for n, parts in self.layers.items():
            layer = lf.concat(parts)
            if layer is not None:
                self.cont.layers[n] = layer
        out = lf.consolidate(lf.concat(self.results), self.ctx.label(self.result))
        return {leave: out for leave in self.leaves}

    def _superstep(self, i: int) -> int:
        cont = self.cont
        delta = self._deltas(i, self.var_next)
        res = delta.get(self.result)
        self.results.append(res)
        fed = res
        if i == 0:
            fed = lf.consolidate(
                lf.concat([res, lf.negate(delta[self.source])]), cont.ctx.label(self.var)
            )
        self.var_next = fed
        return 0 if fed is None else fed.num_rows

    def _deltas(self, i: int, var_next: pa.Table | None) -> dict[int, pa.Table | None]:
        cont, ctx = self.cont, self.ctx
        delta: dict[int, pa.Table | None] = {}
        for n in self.members:
            op = ctx.nodes[n]["op"]
            d: pa.Table | None
            if n not in self.variant and i > 0:
                delta[n] = None
                continue
            if op in (EnterOp.OP, EnterArrangementOp.OP):
                d = cont.delta(ctx.inputs(n)[0]) if i == 0 else None
            elif op == VariableOp.OP:
                d = delta[self.source] if i == 0 else var_next
            elif op == ConcatOp.OP:
                d = lf.concat([delta[m] for m in ctx.inputs(n)])
            elif op == JoinOp.OP:
                d = self._join(n, i, delta)
            elif op == ReduceOp.OP:
                d = self._reduce(n, i, delta)
            elif op == LeaveOp.OP:
                continue
            else:
                d = cont.linear(n, delta[ctx.inputs(n)[0]])
            if d is not None and d.num_rows == 0:
                d = None
            if d is not None and n in cont.stored:
                its = pa.array(np.full(d.num_rows, i, dtype=np.int32))
                self.layers.setdefault(n, []).append(d.append_column(ITER, its))
            delta[n] = d
        for n in self.members:
            d = delta.get(n)
            if d is not None and n in cont.stored:
                self.acc[n] = lf.concat([self.acc.get(n), d])
        return delta

    def _join(self, n: int, i: int, delta: dict[int, pa.Table | None]) -> pa.Table | None:
        cont = self.cont
        a, b = self.ctx.inputs(n)
        k = self.ctx.key_len(a)
        da, db = delta[a], delta[b]
        a_lt, b_lt = self.acc.get(a), self.acc.get(b)
        terms: list[pa.Table | None] = []
        if self.ctx.nodes[n]["kind"] == "antijoin":
            terms.append(da)
        if da is not None:
            if b not in self.variant:
                terms.append(cont.join(n, da, self._invariant(b, db, b_lt)))
            else:
                keys = lf.key_set(da, k)
                terms.append(cont.join(n, da, lf.concat([self.upto(b, i, keys, k), b_lt, db])))
        if a_lt is not None:
            terms.append(cont.join(n, a_lt, lf.concat([self.at(b, i), db])))
        if b_lt is not None:
            terms.append(cont.join(n, self.at(a, i), b_lt))
        if db is not None:
            keys = lf.key_set(db, k)
            terms.append(cont.join(n, self.upto(a, i, keys, k), db))
        return lf.consolidate(lf.concat(terms), self.ctx.label(n))

    def _invariant(self, b: int, db: pa.Table | None, b_lt: pa.Table | None) -> pa.Table | None:
        """Loop-invariant join input ``b``: stored plus new history (kept for the run)."""
        if b not in self.invariant_full:
            self.invariant_full[b] = lf.concat([self.at(b, 0), db, b_lt])
        return self.invariant_full[b]

    def _reduce(self, n: int, i: int, delta: dict[int, pa.Table | None]) -> pa.Table | None:
        cont, ctx = self.cont, self.ctx
        x = ctx.inputs(n)[0]
        k = ctx.key_len(x)
        dx, dx_lt = delta[x], self.acc.get(x)
        keysets: list[pa.Table | None] = []
        if dx is not None:
            keysets.append(lf.key_set(dx, k))
        if dx_lt is not None:
            keysets.append(lf.semi(self.at(x, i), lf.key_set(dx_lt, k), k))
        found = lf.concat([None if s is None else s.select(s.column_names[:k]) for s in keysets])
        if found is None:
            return None
        touched = lf.key_set(found, k)
        upto = lf.concat([self.upto(x, i, touched, k), lf.semi(dx_lt, touched, k), dx])
        full = cont.recompute(n, upto)
        before = lf.concat([self.upto(n, i, touched, k), lf.semi(self.acc.get(n), touched, k)])
        return lf.consolidate(lf.concat([full, lf.negate(before)]), ctx.label(n))
