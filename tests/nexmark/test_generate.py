"""The numpy Nexmark generator (``benches/nexmark/generate.py``) against the ``nexmark``
crate it ports: ``data/crate_*.arrow`` are the crate's first 10,000 events as
``rust/nexmark-gen`` wrote them (the numeric columns, a few strings, and the length of
``extra``). The deterministic columns (which events exist, ids, times) must be equal; the
random ones must obey the crate's rules in both, with the same laws (the share of hot
auctions, sellers and bidders, price quantiles, string lengths)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pytest
from benches.nexmark import generate as g

EVENTS = 10_000
DATA = Path(__file__).parent / "data"
Columns = dict[str, np.ndarray]


def crate() -> dict[str, pa.Table]:
    return {
        name: ipc.open_file(pa.memory_map(str(DATA / f"crate_{name}.arrow"))).read_all()
        for name in g.SCHEMAS
    }


def port() -> dict[str, pa.Table]:
    tables = g.generate(EVENTS, seed=5)
    return {
        name: t.append_column("extra_len", pc.binary_length(t["extra"]).cast(pa.int64()))
        for name, t in tables.items()
    }


SOURCES = {"crate": crate, "port": port}


def numbers(table: pa.Table) -> Columns:
    return {
        c: table[c].to_numpy() for c in table.column_names if pa.types.is_integer(table[c].type)
    }


def event_numbers(table: pa.Table) -> np.ndarray:
    """Event numbers from times: exact below ~27,000 events at 10 ms each."""
    return (table["date_time"].to_numpy() - g.BASE_TIME) // 10


def test_deterministic_columns_equal_the_crate() -> None:
    ours, theirs = port(), crate()
    for name, columns in [
        ("person", ["id", "date_time"]),
        ("auction", ["id", "date_time"]),
        ("bid", ["date_time"]),
    ]:
        assert ours[name].num_rows == theirs[name].num_rows, name
        for c in columns:
            assert ours[name][c].equals(theirs[name][c]), f"{name}.{c}"


def test_event_time_drifts_as_the_crate_does() -> None:
    """float32 arithmetic: exact to 26,843 events, then off by a few ms (the crate's own
    times at 1M events differ from 10 n by at most 1 ms), still increasing to 10M events
    (past 2^24 events, float32 gives two events one time)."""
    n = np.r_[np.arange(30_000), np.arange(9_000_000, 10_000_000)].astype(np.int64)
    drift = g.event_time(n) - (g.BASE_TIME + 10 * n)
    assert not drift[n < 26_843].any()
    assert np.abs(drift).max() <= 8 and (np.diff(g.event_time(n)) >= 8).all()


@pytest.mark.parametrize("source", SOURCES)
def test_references_follow_the_rules(source: str) -> None:
    tables = SOURCES[source]()
    bid, auction = numbers(tables["bid"]), numbers(tables["auction"])
    n = event_numbers(tables["bid"])
    top = g.auction_last_id(n)
    hot_auction = bid["auction"] - g.FIRST_ID == top // 100 * 100
    low = np.maximum(top - 100, 0)
    assert (hot_auction | (bid["auction"] - g.FIRST_ID >= low)).all()
    assert (bid["auction"] - g.FIRST_ID <= top + g.ID_LEAD).all()
    people = g.person_last_id(n) + 1
    hot_bidder = bid["bidder"] - g.FIRST_ID == (people - 1) // 100 * 100 + 1
    active = np.minimum(people, 1000)
    assert (bid["bidder"] - g.FIRST_ID >= people - active).all()
    assert (bid["bidder"] - g.FIRST_ID < people + g.ID_LEAD).all()
    # A bid goes to the hot auction with odds 1/2 (+ the uniform pick landing on it), to a
    # hot bidder with odds 3/4 (+ the same).
    assert 0.47 < hot_auction.mean() < 0.56
    assert 0.73 < hot_bidder.mean() < 0.80
    na = event_numbers(tables["auction"])
    hot_seller = auction["seller"] - g.FIRST_ID == g.person_last_id(na) // 100 * 100
    assert 0.70 < hot_seller.mean() < 0.82
    assert ((auction["category"] >= 10) & (auction["category"] < 15)).all()
    horizon = g.event_time(na + 1666) - auction["date_time"]
    length = auction["expires"] - auction["date_time"]
    assert ((length >= 1) & (length <= 2 * horizon)).all()
    assert (auction["reserve"] > auction["initial_bid"]).all()


@pytest.mark.parametrize("source", SOURCES)
def test_values_follow_the_rules(source: str) -> None:
    tables = SOURCES[source]()
    person = tables["person"]
    assert set(person["city"].to_pylist()) <= set(g.CITIES.split(","))
    assert set(person["state"].to_pylist()) <= set(g.STATES.split(","))
    first = {name.split(" ")[0] for name in person["name"].to_pylist()}
    assert first <= set(g.FIRST_NAMES.split(","))
    channels = tables["bid"]["channel"].to_pylist()
    assert all(c in g.HOT_CHANNELS or c.startswith("channel-") for c in channels)
    hot_channel = np.mean([c in g.HOT_CHANNELS for c in channels])
    assert 0.45 < hot_channel < 0.55
    # extra: the rest of an average row size, +-20%: bids 32 -> 100 bytes, auctions
    # 168 -> 500.
    bid_extra = tables["bid"]["extra_len"].to_numpy()
    assert bid_extra.min() >= 54 and bid_extra.max() < 54 + 28
    auction_extra = tables["auction"]["extra_len"].to_numpy()
    assert auction_extra.min() >= 266 and auction_extra.max() < 266 + 132


def test_same_laws_as_the_crate() -> None:
    """Prices are round(10^(6u) * 100) cents: log10(price / 100) / 6 is uniform in both."""
    ours, theirs = port(), crate()
    for name, column in [("bid", "price"), ("auction", "initial_bid")]:
        a = np.log10(ours[name][column].to_numpy() / 100) / 6
        b = np.log10(theirs[name][column].to_numpy() / 100) / 6
        qs = [0.1, 0.25, 0.5, 0.75, 0.9]
        assert np.allclose(np.quantile(a, qs), qs, atol=0.06), name
        assert np.allclose(np.quantile(b, qs), qs, atol=0.06), name
