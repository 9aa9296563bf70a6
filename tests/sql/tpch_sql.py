"""The 22 TPC-H queries as SQL text for ``dd.sql``: the specification's text with its
validation-run parameters, in DuckDB's date syntax, without ``LIMIT`` (the whole result is
compared; an ``ORDER BY`` without ``LIMIT`` is ignored); :func:`limited` gives the five
that have a ``LIMIT`` with it and their ``ORDER BY`` (a maintained top-k). The same text
runs in DuckDB as the oracle.

Most texts are :data:`benches.tpch.sql.ORACLE`'s; those that the oracle rewrites to divide
exactly (``avg`` and ``/`` of decimals) are given here as the specification writes them, and
their results compare to the last digit of ddflow's decimal (DuckDB divides decimals into
DOUBLEs, ddflow exactly to scale ``s + 4``).
"""

from __future__ import annotations

from benches.tpch.sql import ORACLE, sql_text

__all__ = ["LIMITS", "QUERIES", "limited", "query"]

_REV = "l_extendedprice * (1 - l_discount)"

_SPEC: dict[str, str] = {
    "q1": f"""select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
            sum(l_extendedprice) as sum_base_price, sum({_REV}) as sum_disc_price,
            sum({_REV} * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty,
            avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
            count(*) as count_order
        from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day
        group by l_returnflag, l_linestatus
        order by l_returnflag, l_linestatus""",
    "q8": f"""select o_year,
            sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
        from (
            select extract(year from o_orderdate) as o_year, {_REV} as volume,
                n2.n_name as nation
            from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
            where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey
                and o_custkey = c_custkey and c_nationkey = n1.n_nationkey
                and n1.n_regionkey = r_regionkey and r_name = 'AMERICA'
                and s_nationkey = n2.n_nationkey
                and o_orderdate between date '1995-01-01' and date '1996-12-31'
                and p_type = 'ECONOMY ANODIZED STEEL') as all_nations
        group by o_year order by o_year""",
    "q14": f"""select 100.00 * sum(case when p_type like 'PROMO%' then {_REV} else 0 end)
                / sum({_REV}) as promo_revenue
        from lineitem, part
        where l_partkey = p_partkey and l_shipdate >= date '1995-09-01'
            and l_shipdate < date '1995-09-01' + interval '1' month""",
    "q17": """select sum(l_extendedprice) / 7.0 as avg_yearly
        from lineitem, part
        where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX'
            and l_quantity < (
                select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)""",
}

QUERIES: tuple[str, ...] = tuple(f"q{i}" for i in range(1, 23))

GLOBAL: frozenset[str] = frozenset({"q6", "q14", "q17", "q19"})
"""Queries of one global aggregate row (all NULL over no rows, in SQL and in ddflow)."""


LIMITS: dict[str, tuple[str, int]] = {
    "q2": ("s_acctbal desc, n_name, s_name, p_partkey", 100),
    "q3": ("revenue desc, o_orderdate", 10),
    "q10": ("revenue desc", 20),
    "q18": ("o_totalprice desc, o_orderdate", 100),
    "q21": ("numwait desc, s_name", 100),
}
"""The specification's ``ORDER BY`` and ``LIMIT`` of each query that has a ``LIMIT`` (the
texts above leave both out). Their keys tell the rows apart, so DuckDB's answer is
determined."""


def limited(name: str, sf: float) -> str:
    """TPC-H query ``name`` with its specification's ``ORDER BY`` and ``LIMIT``."""
    order, n = LIMITS[name]
    return f"{query(name, sf)}\n        order by {order}\n        limit {n}"


def query(name: str, sf: float) -> str:
    """The SQL text of TPC-H query ``name`` at scale factor ``sf``."""
    return _SPEC[name] if name in _SPEC else sql_text(name, sf)


assert set(ORACLE) == set(QUERIES)
