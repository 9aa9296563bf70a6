"""Nexmark queries q0-q8 in SQL, one text for ``dd.sql`` and DuckDB alike.

The tables are the generator's (``generate.SCHEMAS``): ``person``, ``auction`` and ``bid``,
with event times as int64 milliseconds. The standard event-time windows are written as
arithmetic on ``date_time``, as a user of ``dd.sql`` writes them: a tumbling 10 s window
starts at ``date_time - date_time % 10000``, and the hopping window of q5 (10 s long,
sliding every 2 s) puts each bid in the five windows starting at
``date_time - date_time % 2000 - k * 2000`` for ``k = 0..4`` (a ``UNION ALL`` of five
selects). The texts follow the Nexmark suite's (Flink's and Beam's SQL, as DBSP and
RisingWave run them); where they use a construct outside plain SQL the comment says what
stands for it:

* q1 converts dollars to euros as ``price * 908 / 1000`` (DuckDB: a double) instead of the
  decimal ``0.908 * price``.
* q5 and q7 keep the window bounds as columns instead of ``HOP_START`` / ``TUMBLE_START``.
* q6 is "the average of each seller's last 10 closed auctions' winning bids": a winning bid
  is the highest bid inside the auction's lifetime, as in q4, and the last 10 are the
  seller's 10 latest auctions (ties broken by id) with ``ROW_NUMBER``, since ``dd.sql`` has
  ranking windows but not ``AVG(...) OVER (ROWS BETWEEN 10 PRECEDING ...)``.
"""

from __future__ import annotations

__all__ = ["QUERIES", "TABLES_READ"]

_HOP = " union all ".join(
    f"select auction, date_time - date_time % 2000 - {k * 2000} as starttime from bid"
    for k in range(5)
)


_RANKS = ("price < 10000", "price >= 10000 and price < 1000000", "price >= 1000000")


def _ranked(aggregate: str, name: str) -> str:
    """Flink's ``count(...) filter (where <rank>)`` columns, written ``count(case ...)``
    (``dd.sql`` has no ``FILTER``): ``aggregate`` with ``{r}`` for each rank's condition."""
    return ", ".join(f"{aggregate.format(r=r)} as rank{i}_{name}" for i, r in enumerate(_RANKS, 1))


QUERIES: dict[str, str] = {
    # Passthrough: every bid.
    "q0": "select auction, bidder, price, date_time, extra from bid",
    # Currency conversion.
    "q1": """
        select auction, bidder, price * 908 / 1000 as price, date_time, extra from bid
    """,
    # Selection: bids on a few auctions.
    "q2": "select auction, price from bid where auction % 123 = 0",
    # Local item suggestion: sellers in some states of category-10 auctions.
    "q3": """
        select p.name, p.city, p.state, a.id
        from auction a join person p on a.seller = p.id
        where a.category = 10 and (p.state = 'or' or p.state = 'id' or p.state = 'ca')
    """,
    # Average winning bid per category.
    "q4": """
        select q.category, avg(q.final) as avg_final
        from (
            select a.id, a.category, max(b.price) as final
            from auction a join bid b on a.id = b.auction
            where b.date_time between a.date_time and a.expires
            group by a.id, a.category
        ) q
        group by q.category
    """,
    # Hot items: the auctions with the most bids in each 10 s window sliding every 2 s.
    "q5": f"""
        with hops as ({_HOP}),
        auction_bids as (
            select auction, starttime, count(*) as num from hops group by auction, starttime
        ),
        max_bids as (
            select starttime, max(num) as maxn from auction_bids group by starttime
        )
        select ab.auction, ab.num, ab.starttime, ab.starttime + 10000 as endtime
        from auction_bids ab join max_bids mb on ab.starttime = mb.starttime
        where ab.num >= mb.maxn
    """,
    # Average selling price per seller over their last 10 auctions.
    "q6": """
        with winning as (
            select a.id, a.seller, a.date_time, max(b.price) as final
            from auction a join bid b on a.id = b.auction
            where b.date_time between a.date_time and a.expires
            group by a.id, a.seller, a.date_time
        ),
        ranked as (
            select seller, final,
                   row_number() over (partition by seller order by date_time desc, id desc) as rn
            from winning
        )
        select seller, avg(final) as avg_final from ranked where rn <= 10 group by seller
    """,
    # Highest bid in each tumbling 10 s window.
    "q7": """
        with windowed as (
            select auction, bidder, price, date_time, extra,
                   date_time - date_time % 10000 as starttime
            from bid
        ),
        max_price as (
            select starttime, max(price) as maxprice from windowed group by starttime
        )
        select w.auction, w.price, w.bidder, w.date_time, w.extra
        from windowed w join max_price m on w.starttime = m.starttime
        where w.price = m.maxprice
    """,
    # New users: people who opened an auction in the 10 s window they registered in.
    "q8": """
        select p.id, p.name, p.starttime
        from (
            select id, name, date_time - date_time % 10000 as starttime
            from person group by id, name, date_time - date_time % 10000
        ) p
        join (
            select seller, date_time - date_time % 10000 as starttime
            from auction group by seller, date_time - date_time % 10000
        ) a
        on p.id = a.seller and p.starttime = a.starttime
    """,
    # Winning bids: each auction's highest bid inside its lifetime (the earliest of ties).
    "q9": """
        select id, item_name, description, initial_bid, reserve, date_time, expires, seller,
               category, extra, auction, bidder, price, bid_date_time, bid_extra
        from (
            select a.*, b.auction, b.bidder, b.price, b.date_time as bid_date_time,
                   b.extra as bid_extra,
                   row_number() over (
                       partition by a.id order by b.price desc, b.date_time asc
                   ) as rownum
            from auction a join bid b on a.id = b.auction
            where b.date_time between a.date_time and a.expires
        ) q
        where rownum <= 1
    """,
    # Bidding statistics per day.
    "q15": f"""
        select date_time - date_time % 86400000 as day,
               count(*) as total_bids,
               {_ranked("count(case when {r} then 1 end)", "bids")},
               count(distinct bidder) as total_bidders,
               {_ranked("count(distinct case when {r} then bidder end)", "bidders")},
               count(distinct auction) as total_auctions,
               {_ranked("count(distinct case when {r} then auction end)", "auctions")}
        from bid
        group by date_time - date_time % 86400000
    """,
    # Channel statistics per day (``minute``: ms since midnight of the latest bid's minute,
    # for Flink's ``max(DATE_FORMAT(date_time, 'HH:mm'))``).
    "q16": f"""
        select channel, date_time - date_time % 86400000 as day,
               max(date_time % 86400000 - date_time % 60000) as minute,
               count(*) as total_bids,
               {_ranked("count(case when {r} then 1 end)", "bids")},
               count(distinct bidder) as total_bidders,
               {_ranked("count(distinct case when {r} then bidder end)", "bidders")},
               count(distinct auction) as total_auctions,
               {_ranked("count(distinct case when {r} then auction end)", "auctions")}
        from bid
        group by channel, date_time - date_time % 86400000
    """,
    # Auction statistics per day.
    "q17": f"""
        select auction, date_time - date_time % 86400000 as day,
               count(*) as total_bids,
               {_ranked("count(case when {r} then 1 end)", "bids")},
               min(price) as min_price, max(price) as max_price, avg(price) as avg_price,
               sum(price) as sum_price
        from bid
        group by auction, date_time - date_time % 86400000
    """,
    # Each bidder's last bid on each auction.
    "q18": """
        select auction, bidder, price, channel, url, date_time, extra
        from (
            select *, row_number() over (
                partition by bidder, auction order by date_time desc
            ) as rank_number
            from bid
        ) q
        where rank_number <= 1
    """,
    # The 10 highest bids of each auction (ties on price: the earliest first).
    "q19": """
        select * from (
            select *, row_number() over (
                partition by auction order by price desc, date_time asc
            ) as rank_number
            from bid
        ) q
        where rank_number <= 10
    """,
    # Bids with their auction's details, for category 10.
    "q20": """
        select b.auction, b.bidder, b.price, b.channel, b.url, b.date_time, b.extra,
               a.item_name, a.description, a.initial_bid, a.reserve,
               a.date_time as auction_date_time, a.expires, a.seller, a.category,
               a.extra as auction_extra
        from bid b join auction a on b.auction = a.id
        where a.category = 10
    """,
}
"""Each query's SQL text, DuckDB's dialect."""

TABLES_READ: dict[str, tuple[str, ...]] = {
    "q0": ("bid",),
    "q1": ("bid",),
    "q2": ("bid",),
    "q3": ("person", "auction"),
    "q4": ("auction", "bid"),
    "q5": ("bid",),
    "q6": ("auction", "bid"),
    "q7": ("bid",),
    "q8": ("person", "auction"),
    "q9": ("auction", "bid"),
    "q15": ("bid",),
    "q16": ("bid",),
    "q17": ("bid",),
    "q18": ("bid",),
    "q19": ("bid",),
    "q20": ("auction", "bid"),
}
"""The tables each query reads (the others need not be fed)."""
