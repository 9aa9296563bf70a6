"""TPC-H refresh functions as update batches: RF1 inserts orders with their lineitems, RF2
deletes orders with their lineitems.

``tpchgen-cli`` writes no refresh sets, so they are derived deterministically from the data
and a seed. Batch ``i`` (1, 2, ...) is one refresh pair touching ``SF * 1500`` orders each
way, 0.1% of the orders as in the TPC-H specification:

* RF1 copies a seeded sample of the live orders with all their lineitems under fresh order
  keys (above every key used so far), each assigned the customer of another seeded live
  order (so only customers that can have orders get them, as in the generator);
* RF2 deletes another seeded sample of the orders live before the batch (ones inserted by
  earlier batches included) with all their lineitems.

Batches hold the original typed rows (for DuckDB); :func:`apply` gives the tables as of the
batch. In ddflow a batch is applied at its own logical time through ``update_batch`` with
diff +1 for the inserts and -1 for the deletes (:mod:`benches.tpch.workload`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["CHANGED", "Refresh", "apply", "make_refreshes", "orders_per_refresh"]

CHANGED: tuple[str, ...] = ("orders", "lineitem")
"""The tables a refresh changes."""


@dataclass(frozen=True)
class Refresh:
    """One refresh pair: rows inserted (RF1) and deleted (RF2), by table, original types."""

    index: int
    inserts: Mapping[str, pa.Table]
    deletes: Mapping[str, pa.Table]

    def rows(self) -> int:
        """Rows inserted plus rows deleted."""
        tables = [*self.inserts.values(), *self.deletes.values()]
        return sum(int(t.num_rows) for t in tables)


def orders_per_refresh(sf: float) -> int:
    """Orders each function of a refresh pair touches: 0.1% of the orders (``SF * 1500``)."""
    return max(1, round(sf * 1500))


def _take_orders(orders: pa.Table, lineitem: pa.Table, keys: pa.Array) -> tuple[pa.Table, ...]:
    """The orders with ``keys`` and their lineitems."""
    return (
        orders.filter(pc.is_in(orders["o_orderkey"], value_set=keys)),
        lineitem.filter(pc.is_in(lineitem["l_orderkey"], value_set=keys)),
    )


def _with_column(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, values)


def make_refreshes(
    tables: Mapping[str, pa.Table],
    sf: float,
    batches: int,
    seed: int = 1,
    per_function: int | None = None,
) -> list[Refresh]:
    """``batches`` refresh pairs following each other from ``tables`` (original types), each
    function touching ``per_function`` orders (default: the specification's ``SF * 1500``)."""
    rng = np.random.default_rng(seed)
    n = orders_per_refresh(sf) if per_function is None else per_function
    orders, lineitem = tables["orders"], tables["lineitem"]
    next_key = int(pc.max(orders["o_orderkey"]).as_py()) + 1
    out = []
    for index in range(1, batches + 1):
        live = orders["o_orderkey"].to_numpy()
        if len(live) < 2 * n:
            raise ValueError(f"too few orders ({len(live)}) for refreshes of {n}")
        picks = rng.choice(len(live), size=2 * n, replace=False)
        template_keys = np.sort(live[picks[:n]])
        deleted_keys = np.sort(live[picks[n:]])
        # RF1: copies of the templates under fresh keys, with another live order's customer.
        t_orders, t_lines = _take_orders(orders, lineitem, pa.array(template_keys))
        t_orders = t_orders.sort_by("o_orderkey")
        fresh = np.arange(next_key, next_key + n, dtype=np.int64)
        next_key += n
        remap = dict(zip(template_keys.tolist(), fresh.tolist(), strict=True))
        custkeys = orders["o_custkey"].to_numpy()[rng.choice(len(live), size=n)]
        new_orders = _with_column(t_orders, "o_orderkey", pa.array(fresh))
        new_orders = _with_column(
            new_orders, "o_custkey", pa.array(custkeys, type=orders.schema.field("o_custkey").type)
        )
        old_keys = t_lines["l_orderkey"].to_numpy()
        new_lines = _with_column(
            t_lines,
            "l_orderkey",
            pa.array(np.array([remap[k] for k in old_keys.tolist()], dtype=np.int64)),
        )
        # RF2: the sampled orders with their lineitems.
        del_orders, del_lines = _take_orders(orders, lineitem, pa.array(deleted_keys))
        refresh = Refresh(
            index,
            inserts={"orders": new_orders.cast(orders.schema), "lineitem": new_lines},
            deletes={"orders": del_orders, "lineitem": del_lines},
        )
        out.append(refresh)
        after = apply({"orders": orders, "lineitem": lineitem}, refresh)
        orders, lineitem = after["orders"], after["lineitem"]
    return out


def apply(tables: Mapping[str, pa.Table], refresh: Refresh) -> dict[str, pa.Table]:
    """The tables after ``refresh`` (unchanged tables are the same objects)."""
    out = dict(tables)
    for name, key in (("orders", "o_orderkey"), ("lineitem", "l_orderkey")):
        if name not in tables:
            continue
        table = tables[name]
        gone = refresh.deletes["orders"]["o_orderkey"]
        kept = table.filter(pc.invert(pc.is_in(table[key], value_set=gone)))
        out[name] = pa.concat_tables([kept, refresh.inserts[name].cast(table.schema)])
    return out
