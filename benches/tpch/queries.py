"""The TPC-H queries written with ddflow's Python API: ``qN(tables, lit) -> Collection``.

``tables`` maps each TPC-H table name to a collection of its rows in TPC-H's own types
(``date32`` dates, ``decimal128(15, 2)`` prices, discounts, taxes and quantities), and every
query uses the substitution parameters of the specification's validation run (as
:mod:`benches.tpch.sql` does). Constants go through ``lit`` (:mod:`benches.tpch.literals`):
``lit.date(datetime.date(1994, 1, 1))``, ``lit.add_months(day, 3)`` for ``date + interval
'3' month`` (``.dt.offset_by("3mo")``), ``lit.dec("0.05")`` for a decimal constant and
``lit.year(...)`` for ``extract(year ...)`` (``.dt.year()``).

Arithmetic is the engine's exact decimal arithmetic, as SQL's: ``l_extendedprice * (1 -
l_discount)`` is ``decimal(38, 4)``, times ``(1 + l_tax)`` scale 6, ``sum`` keeps the scale,
``mean`` has scale ``s + 4`` and ``/`` scale ``s1 + 4`` (both rounded half away from zero).
Each result has the columns of the query's ``SELECT`` list, named as there. ``ORDER BY`` and
``LIMIT`` are left out: a collection has no order, and the whole result before the limit is
what is compared.

Correlated subqueries are decorrelated by hand (a ``reduce`` per correlation key joined
back, ``EXISTS`` as ``semijoin``, ``NOT EXISTS`` / ``NOT IN`` as ``antijoin``); a comparison
with an ``avg`` is multiplied out (``x < 0.2 * avg`` is ``5 * x * count < sum``), exact where
the mean rounded to scale ``s + 4`` could in principle flip it. Aggregates are
``group_by(...).agg(...)`` on a ``select`` of the keys and the aggregates' arguments (a group
is present while any of its rows is, whatever its other columns, so narrowing first keeps the
reduce's state small); ``LIKE``, ``SUBSTRING`` and ``IN`` are the ``.str`` expressions and
``is_in``.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Mapping

from benches.tpch.literals import TYPED, Literals

import ddflow as dd
from ddflow.expr import Expr

__all__ = ["QUERIES", "Tables", "build"]

Tables = Mapping[str, dd.Collection]
col = dd.col
date = datetime.date


def _revenue(lit: Literals) -> Expr:
    """``l_extendedprice * (1 - l_discount)`` (scale 4)."""
    return col("l_extendedprice") * (lit.dec("1") - col("l_discount"))


def _in_range(lit: Literals, column: str, start: datetime.date, months: int) -> Expr:
    """``column >= date 'start' and column < date 'start' + interval 'months' month``."""
    return (col(column) >= lit.date(start)) & (col(column) < lit.add_months(start, months))


def _flag(condition: Expr) -> Expr:
    """SQL's ``CASE WHEN condition THEN 1 ELSE 0 END``."""
    return dd.when(condition).then(1).otherwise(0)


def _nations_in(t: Tables, region: str) -> dd.Collection:
    """``n_nationkey, n_name`` of the nations of ``region``."""
    regions = t["region"].filter(col("r_name") == region).select("r_regionkey")
    nations = t["nation"].select("n_nationkey", "n_name", "n_regionkey")
    joined = nations.join(regions, left_on="n_regionkey", right_on="r_regionkey")
    return joined.select("n_nationkey", "n_name")


def _suppliers_in(t: Tables, nation: str) -> dd.Collection:
    """The supplier rows of ``nation``."""
    nations = t["nation"].filter(col("n_name") == nation).select("n_nationkey")
    return t["supplier"].semijoin(nations, left_on="s_nationkey", right_on="n_nationkey")


def q1(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Pricing summary report."""
    cutoff = date(1998, 12, 1) - datetime.timedelta(days=90)
    li = t["lineitem"].filter(col("l_shipdate") <= lit.date(cutoff))
    li = li.select(
        "l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax"
    )
    price, disc, tax = col("l_extendedprice"), col("l_discount"), col("l_tax")
    one = lit.dec("1")
    return li.group_by("l_returnflag", "l_linestatus").agg(
        sum_qty=dd.sum("l_quantity"),
        sum_base_price=dd.sum(price),
        sum_disc_price=dd.sum(price * (one - disc)),
        sum_charge=dd.sum(price * (one - disc) * (one + tax)),
        avg_qty=dd.mean("l_quantity"),
        avg_price=dd.mean(price),
        avg_disc=dd.mean(disc),
        count_order=dd.count(),
    )


def q2(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Minimum cost supplier (the minimum per part decorrelated as a ``reduce``)."""
    supp = t["supplier"].select(
        "s_suppkey", "s_nationkey", "s_acctbal", "s_name", "s_address", "s_phone", "s_comment"
    )
    supp = supp.join(_nations_in(t, "EUROPE"), left_on="s_nationkey", right_on="n_nationkey")
    parts = t["part"].filter(col("p_size") == 15).filter(col("p_type").str.like("%BRASS"))
    parts = parts.select("p_partkey", "p_mfgr")
    ps = t["partsupp"].select("ps_partkey", "ps_suppkey", "ps_supplycost")
    ps = ps.semijoin(supp, left_on="ps_suppkey", right_on="s_suppkey")
    ps = ps.semijoin(parts, left_on="ps_partkey", right_on="p_partkey")
    cheapest = ps.select("ps_partkey", "ps_supplycost").reduce(
        "ps_partkey", dd.min("ps_supplycost")
    )
    best = ps.join(cheapest, on=["ps_partkey", "ps_supplycost"])
    best = best.join(parts, left_on="ps_partkey", right_on="p_partkey")
    best = best.join(supp, left_on="ps_suppkey", right_on="s_suppkey")
    best = best.rename(ps_partkey="p_partkey")
    return best.select(
        "s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone",
        "s_comment",
    )  # fmt: skip


def q3(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Shipping priority."""
    day = lit.date(date(1995, 3, 15))
    cust = t["customer"].filter(col("c_mktsegment") == "BUILDING").select("c_custkey")
    orders = t["orders"].filter(col("o_orderdate") < day)
    orders = orders.select("o_orderkey", "o_custkey", "o_orderdate", "o_shippriority")
    orders = orders.join(cust, left_on="o_custkey", right_on="c_custkey")
    li = t["lineitem"].filter(col("l_shipdate") > day)
    li = li.select("l_orderkey", rev=_revenue(lit))
    j = li.join(orders, left_on="l_orderkey", right_on="o_orderkey")
    j = j.select("l_orderkey", "o_orderdate", "o_shippriority", "rev")
    return j.group_by("l_orderkey", "o_orderdate", "o_shippriority").agg(revenue=dd.sum("rev"))


def q4(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Order priority checking (``EXISTS`` as a semijoin)."""
    late = t["lineitem"].filter(col("l_commitdate") < col("l_receiptdate")).select("l_orderkey")
    orders = t["orders"].filter(_in_range(lit, "o_orderdate", date(1993, 7, 1), 3))
    orders = orders.select("o_orderkey", "o_orderpriority")
    orders = orders.semijoin(late, left_on="o_orderkey", right_on="l_orderkey")
    return orders.group_by("o_orderpriority").agg(order_count=dd.count())


def q5(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Local supplier volume."""
    supp = t["supplier"].select("s_suppkey", "s_nationkey")
    supp = supp.join(_nations_in(t, "ASIA"), left_on="s_nationkey", right_on="n_nationkey")
    orders = t["orders"].filter(_in_range(lit, "o_orderdate", date(1994, 1, 1), 12))
    orders = orders.select("o_orderkey", "o_custkey")
    cust = t["customer"].select("c_custkey", "c_nationkey")
    orders = orders.join(cust, left_on="o_custkey", right_on="c_custkey")
    li = t["lineitem"].select("l_orderkey", "l_suppkey", rev=_revenue(lit))
    orders = orders.select("o_orderkey", "c_nationkey")
    j = li.join(orders, left_on="l_orderkey", right_on="o_orderkey")
    j = j.join(supp, left_on=["l_suppkey", "c_nationkey"], right_on=["s_suppkey", "s_nationkey"])
    return j.select("n_name", "rev").group_by("n_name").agg(revenue=dd.sum("rev"))


def q6(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Forecasting revenue change (``between 0.06 - 0.01 and 0.06 + 0.01`` computed)."""
    li = t["lineitem"].filter(
        _in_range(lit, "l_shipdate", date(1994, 1, 1), 12)
        & (col("l_discount") >= lit.dec("0.05")) & (col("l_discount") <= lit.dec("0.07"))
        & (col("l_quantity") < lit.dec("24"))
    )  # fmt: skip
    li = li.select(rev=col("l_extendedprice") * col("l_discount"))
    return li.group_by().agg(revenue=dd.sum("rev"))


def q7(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Volume shipping."""
    nations = t["nation"].filter(col("n_name").is_in(("FRANCE", "GERMANY")))
    nations = nations.select("n_nationkey", "n_name")
    supp = t["supplier"].select("s_suppkey", "s_nationkey")
    supp = supp.join(nations, left_on="s_nationkey", right_on="n_nationkey")
    supp = supp.select("s_suppkey", supp_nation=col("n_name"))
    cust = t["customer"].select("c_custkey", "c_nationkey")
    cust = cust.join(nations, left_on="c_nationkey", right_on="n_nationkey")
    orders = t["orders"].select("o_orderkey", "o_custkey")
    orders = orders.join(cust, left_on="o_custkey", right_on="c_custkey")
    orders = orders.select("o_orderkey", cust_nation=col("n_name"))
    li = t["lineitem"].filter(
        (col("l_shipdate") >= lit.date(date(1995, 1, 1)))
        & (col("l_shipdate") <= lit.date(date(1996, 12, 31)))
    )
    li = li.select(
        "l_orderkey", "l_suppkey", l_year=lit.year(col("l_shipdate")), volume=_revenue(lit)
    )
    j = li.join(supp, left_on="l_suppkey", right_on="s_suppkey")
    j = j.join(orders, left_on="l_orderkey", right_on="o_orderkey")
    j = j.filter(col("supp_nation") != col("cust_nation"))
    j = j.select("supp_nation", "cust_nation", "l_year", "volume")
    return j.group_by("supp_nation", "cust_nation", "l_year").agg(revenue=dd.sum("volume"))


def q8(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """National market share."""
    america = _nations_in(t, "AMERICA").select("n_nationkey")
    cust = t["customer"].select("c_custkey", "c_nationkey")
    cust = cust.semijoin(america, left_on="c_nationkey", right_on="n_nationkey")
    orders = t["orders"].filter(
        (col("o_orderdate") >= lit.date(date(1995, 1, 1)))
        & (col("o_orderdate") <= lit.date(date(1996, 12, 31)))
    )
    orders = orders.select("o_orderkey", "o_custkey", o_year=lit.year(col("o_orderdate")))
    orders = orders.semijoin(cust, left_on="o_custkey", right_on="c_custkey")
    parts = t["part"].filter(col("p_type") == "ECONOMY ANODIZED STEEL").select("p_partkey")
    supp = t["supplier"].select("s_suppkey", "s_nationkey")
    supp = supp.join(t["nation"].select("n_nationkey", "n_name"), left_on="s_nationkey",
                     right_on="n_nationkey")  # fmt: skip
    li = t["lineitem"].select("l_orderkey", "l_partkey", "l_suppkey", volume=_revenue(lit))
    li = li.semijoin(parts, left_on="l_partkey", right_on="p_partkey")
    j = li.join(orders.select("o_orderkey", "o_year"), left_on="l_orderkey", right_on="o_orderkey")
    j = j.join(supp.select("s_suppkey", "n_name"), left_on="l_suppkey", right_on="s_suppkey")
    brazil = dd.when(col("n_name") == "BRAZIL").then(col("volume")).otherwise(0)
    j = j.select("o_year", "volume", brazil=brazil)
    out = j.group_by("o_year").agg(brazil=dd.sum("brazil"), total=dd.sum("volume"))
    return out.select("o_year", mkt_share=col("brazil") / col("total"))


def q9(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Product type profit measure."""
    parts = t["part"].filter(col("p_name").str.like("%green%")).select("p_partkey")
    li = t["lineitem"].select(
        "l_orderkey", "l_partkey", "l_suppkey", "l_quantity", rev=_revenue(lit)
    )
    li = li.semijoin(parts, left_on="l_partkey", right_on="p_partkey")
    ps = t["partsupp"].select("ps_partkey", "ps_suppkey", "ps_supplycost")
    j = li.join(ps, left_on=["l_partkey", "l_suppkey"], right_on=["ps_partkey", "ps_suppkey"])
    orders = t["orders"].select("o_orderkey", o_year=lit.year(col("o_orderdate")))
    j = j.join(orders, left_on="l_orderkey", right_on="o_orderkey")
    supp = t["supplier"].select("s_suppkey", "s_nationkey")
    supp = supp.join(t["nation"].select("n_nationkey", "n_name"), left_on="s_nationkey",
                     right_on="n_nationkey").select("s_suppkey", nation=col("n_name"))  # fmt: skip
    j = j.join(supp, left_on="l_suppkey", right_on="s_suppkey")
    amount = col("rev") - col("ps_supplycost") * col("l_quantity")
    j = j.select("nation", "o_year", amount=amount)
    return j.group_by("nation", "o_year").agg(sum_profit=dd.sum("amount"))


def q10(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Returned item reporting (revenue per customer first, then the customer's columns)."""
    orders = t["orders"].filter(_in_range(lit, "o_orderdate", date(1993, 10, 1), 3))
    orders = orders.select("o_orderkey", "o_custkey")
    li = t["lineitem"].filter(col("l_returnflag") == "R").select("l_orderkey", rev=_revenue(lit))
    j = li.join(orders, left_on="l_orderkey", right_on="o_orderkey")
    per = j.select("o_custkey", "rev").group_by("o_custkey").agg(revenue=dd.sum("rev"))
    cust = t["customer"].select(
        "c_custkey", "c_name", "c_acctbal", "c_phone", "c_nationkey", "c_address", "c_comment"
    )
    cust = cust.join(t["nation"].select("n_nationkey", "n_name"), left_on="c_nationkey",
                     right_on="n_nationkey")  # fmt: skip
    out = per.join(cust, left_on="o_custkey", right_on="c_custkey").rename(o_custkey="c_custkey")
    return out.select(
        "c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone",
        "c_comment",
    )  # fmt: skip


def q11(t: Tables, lit: Literals = TYPED, sf: float = 1.0) -> dd.Collection:
    """Important stock identification (FRACTION is ``0.0001 / SF``, an exact decimal)."""
    fraction = decimal.Decimal("0.0001") / decimal.Decimal(f"{sf:g}")
    supp = _suppliers_in(t, "GERMANY").select("s_suppkey")
    value = col("ps_supplycost") * col("ps_availqty")
    ps = t["partsupp"].select("ps_partkey", "ps_suppkey", v=value)
    ps = ps.semijoin(supp, left_on="ps_suppkey", right_on="s_suppkey")
    per = ps.group_by("ps_partkey").agg(value=dd.sum("v")).with_columns(_g=0)
    total = ps.group_by().agg(total=dd.sum("v")).with_columns(_g=0)
    j = per.join(total, on="_g")
    j = j.filter(col("value") > col("total") * lit.dec(format(fraction.normalize(), "f")))
    return j.select("ps_partkey", "value")


def q12(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Shipping modes and order priority."""
    li = t["lineitem"].filter(
        col("l_shipmode").is_in(("MAIL", "SHIP"))
        & (col("l_commitdate") < col("l_receiptdate"))
        & (col("l_shipdate") < col("l_commitdate"))
        & _in_range(lit, "l_receiptdate", date(1994, 1, 1), 12)
    )
    li = li.select("l_orderkey", "l_shipmode")
    orders = t["orders"].select("o_orderkey", "o_orderpriority")
    j = li.join(orders, left_on="l_orderkey", right_on="o_orderkey")
    j = j.select("l_shipmode", "o_orderpriority")
    high = col("o_orderpriority").is_in(("1-URGENT", "2-HIGH"))
    return j.group_by("l_shipmode").agg(
        high_line_count=dd.sum(_flag(high)), low_line_count=dd.sum(_flag(~high))
    )


def q13(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Customer distribution (``LEFT OUTER JOIN``, ``count(o_orderkey)`` skipping the
    padded nulls)."""
    orders = t["orders"].filter(~col("o_comment").str.like("%special%requests%"))
    cust = t["customer"].select("c_custkey")
    joined = cust.join(
        orders.select("o_custkey", "o_orderkey"),
        left_on="c_custkey",
        right_on="o_custkey",
        how="left",
    )
    per = joined.group_by("c_custkey").agg(c_count=dd.count("o_orderkey"))
    return per.group_by("c_count").agg(custdist=dd.count())


def q14(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Promotion effect."""
    li = t["lineitem"].filter(_in_range(lit, "l_shipdate", date(1995, 9, 1), 1))
    li = li.select("l_partkey", rev=_revenue(lit))
    parts = t["part"].select("p_partkey", "p_type")
    j = li.join(parts, left_on="l_partkey", right_on="p_partkey")
    promo = dd.when(col("p_type").str.like("PROMO%")).then(col("rev")).otherwise(0)
    j = j.select("rev", promo=promo)
    out = j.group_by().agg(promo=dd.sum("promo"), total=dd.sum("rev"))
    return out.select(promo_revenue=lit.dec("100.00") * col("promo") / col("total"))


def q15(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Top supplier (the revenue view as a ``reduce``, its maximum as a global one)."""
    li = t["lineitem"].filter(_in_range(lit, "l_shipdate", date(1996, 1, 1), 3))
    revenue = li.select("l_suppkey", rev=_revenue(lit))
    revenue = revenue.group_by("l_suppkey").agg(total_revenue=dd.sum("rev"))
    top = revenue.group_by().agg(total_revenue=dd.max("total_revenue"))
    best = revenue.join(top, on="total_revenue")
    supp = t["supplier"].select("s_suppkey", "s_name", "s_address", "s_phone")
    out = supp.join(best, left_on="s_suppkey", right_on="l_suppkey")
    return out.select("s_suppkey", "s_name", "s_address", "s_phone", "total_revenue")


def q16(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Parts/supplier relationship (``NOT IN`` as an antijoin: no key is null)."""
    complaints = t["supplier"].filter(col("s_comment").str.like("%Customer%Complaints%"))
    parts = (
        t["part"]
        .filter(
            (col("p_brand") != "Brand#45") & col("p_size").is_in((49, 14, 23, 45, 19, 3, 36, 9))
        )
        .filter(~col("p_type").str.like("MEDIUM POLISHED%"))
    )
    parts = parts.select("p_partkey", "p_brand", "p_type", "p_size")
    ps = t["partsupp"].select("ps_partkey", "ps_suppkey")
    ps = ps.antijoin(complaints.select("s_suppkey"), left_on="ps_suppkey", right_on="s_suppkey")
    j = ps.join(parts, left_on="ps_partkey", right_on="p_partkey")
    j = j.select("p_brand", "p_type", "p_size", "ps_suppkey")
    return j.group_by("p_brand", "p_type", "p_size").agg(
        supplier_cnt=dd.count_distinct("ps_suppkey")
    )


def q17(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Small-quantity-order revenue (``l_quantity < 0.2 * avg`` as ``5 * q * n < sum``)."""
    parts = t["part"].filter((col("p_brand") == "Brand#23") & (col("p_container") == "MED BOX"))
    li = t["lineitem"].select("l_partkey", "l_quantity", "l_extendedprice")
    li = li.semijoin(parts.select("p_partkey"), left_on="l_partkey", right_on="p_partkey")
    stats = li.group_by("l_partkey").agg(qsum=dd.sum("l_quantity"), qn=dd.count())
    small = li.join(stats, on="l_partkey")
    small = small.filter(col("l_quantity") * 5 * col("qn") < col("qsum"))
    out = small.select("l_extendedprice").group_by().agg(total=dd.sum("l_extendedprice"))
    return out.select(avg_yearly=col("total") / lit.dec("7.0"))


def q18(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Large volume customer (an order's ``sum(l_quantity)`` is both the ``IN`` test and the
    result column)."""
    li = t["lineitem"].select("l_orderkey", "l_quantity")
    per = li.group_by("l_orderkey").agg(sum_qty=dd.sum("l_quantity"))
    big = per.filter(col("sum_qty") > lit.dec("300"))
    orders = t["orders"].select("o_orderkey", "o_custkey", "o_orderdate", "o_totalprice")
    j = orders.join(big, left_on="o_orderkey", right_on="l_orderkey")
    j = j.join(t["customer"].select("c_custkey", "c_name"), left_on="o_custkey",
               right_on="c_custkey").rename(o_custkey="c_custkey")  # fmt: skip
    return j.select("c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice", "sum_qty")


def q19(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Discounted revenue."""
    li = t["lineitem"].filter(
        col("l_shipmode").is_in(("AIR", "AIR REG")) & (col("l_shipinstruct") == "DELIVER IN PERSON")
    )
    li = li.select("l_partkey", "l_quantity", rev=_revenue(lit))
    parts = t["part"].select("p_partkey", "p_brand", "p_container", "p_size")
    j = li.join(parts, left_on="l_partkey", right_on="p_partkey")

    def case(brand: str, size: str, quantity: int, max_size: int) -> Expr:
        kinds = ("BAG", "BOX", "PKG", "PACK") if size == "MED" else ("CASE", "BOX", "PACK", "PKG")
        containers = tuple(f"{size} {kind}" for kind in kinds)
        return (
            (col("p_brand") == brand) & col("p_container").is_in(containers)
            & (col("l_quantity") >= lit.dec(str(quantity)))
            & (col("l_quantity") <= lit.dec(str(quantity + 10)))
            & (col("p_size") >= 1) & (col("p_size") <= max_size)
        )  # fmt: skip

    j = j.filter(
        case("Brand#12", "SM", 1, 5) | case("Brand#23", "MED", 10, 10)
        | case("Brand#34", "LG", 20, 15)
    )  # fmt: skip
    return j.group_by().agg(revenue=dd.sum("rev"))


def q20(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Potential part promotion (the correlated ``sum`` per part and supplier joined
    back)."""
    forest = t["part"].filter(col("p_name").str.like("forest%")).select("p_partkey")
    li = t["lineitem"].filter(_in_range(lit, "l_shipdate", date(1994, 1, 1), 12))
    li = li.select("l_partkey", "l_suppkey", "l_quantity")
    shipped = li.group_by("l_partkey", "l_suppkey").agg(q=dd.sum("l_quantity"))
    ps = t["partsupp"].select("ps_partkey", "ps_suppkey", "ps_availqty")
    ps = ps.semijoin(forest, left_on="ps_partkey", right_on="p_partkey")
    ps = ps.join(shipped, left_on=["ps_partkey", "ps_suppkey"], right_on=["l_partkey", "l_suppkey"])
    ok = ps.filter(col("ps_availqty") > lit.dec("0.5") * col("q")).select("ps_suppkey")
    supp = _suppliers_in(t, "CANADA").semijoin(ok, left_on="s_suppkey", right_on="ps_suppkey")
    return supp.select("s_name", "s_address")


def q21(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Suppliers who kept orders waiting (``EXISTS`` another supplier: the order has more
    than one distinct supplier; ``NOT EXISTS`` another late one: exactly one late)."""
    li = t["lineitem"]
    suppliers = li.group_by("l_orderkey").agg(n=dd.count_distinct("l_suppkey"))
    multi = suppliers.filter(col("n") > 1).select("l_orderkey")
    late = li.filter(col("l_receiptdate") > col("l_commitdate")).select("l_orderkey", "l_suppkey")
    late_suppliers = late.group_by("l_orderkey").agg(n=dd.count_distinct("l_suppkey"))
    alone = late_suppliers.filter(col("n") == 1).select("l_orderkey")
    finished = t["orders"].filter(col("o_orderstatus") == "F").select("o_orderkey")
    l1 = late.semijoin(finished, left_on="l_orderkey", right_on="o_orderkey")
    l1 = l1.semijoin(multi, on="l_orderkey").semijoin(alone, on="l_orderkey")
    supp = _suppliers_in(t, "SAUDI ARABIA").select("s_suppkey", "s_name")
    j = l1.join(supp, left_on="l_suppkey", right_on="s_suppkey")
    return j.select("s_name").group_by("s_name").agg(numwait=dd.count())


def q22(t: Tables, lit: Literals = TYPED) -> dd.Collection:
    """Global sales opportunity (``c_acctbal > avg`` as ``c_acctbal * n > sum``)."""
    codes = ("13", "31", "23", "29", "30", "18", "17")
    cust = (
        t["customer"]
        .select("c_custkey", "c_acctbal", cntrycode=col("c_phone").str.slice(0, 2))
        .filter(col("cntrycode").is_in(codes))
    )
    positive = cust.filter(col("c_acctbal") > lit.dec("0.00"))
    avg = positive.group_by().agg(s=dd.sum("c_acctbal"), n=dd.count()).with_columns(_g=0)
    idle = cust.antijoin(t["orders"].select("o_custkey"), left_on="c_custkey", right_on="o_custkey")
    rich = idle.with_columns(_g=0).join(avg, on="_g")
    rich = rich.filter(col("c_acctbal") * col("n") > col("s")).select("cntrycode", "c_acctbal")
    return rich.group_by("cntrycode").agg(numcust=dd.count(), totacctbal=dd.sum("c_acctbal"))


_ALL: list[Callable[..., dd.Collection]] = [
    q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15, q16, q17, q18, q19, q20,
    q21, q22,
]  # fmt: skip
QUERIES: dict[str, Callable[..., dd.Collection]] = {fn.__name__: fn for fn in _ALL}
"""Every written query by name."""


def build(name: str, tables: Tables, sf: float) -> dd.Collection:
    """Query ``name`` over ``tables`` (Q11's threshold depends on the scale factor)."""
    if name == "q11":
        return q11(tables, TYPED, sf=sf)
    return QUERIES[name](tables, TYPED)
