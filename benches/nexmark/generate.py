"""Nexmark events in numpy: a vectorised port of the ``nexmark`` crate's generator (0.2.0,
RisingWave's port of the standard Java one), for tests and for machines without Cargo.

The rules that decide which rows exist and how they refer to each other are the crate's,
with its default configuration: event ``n`` is a person when ``n % 50 == 0``, an auction when
``n % 50`` is 1-3, else a bid; person and auction ids count up from 1,000; event time is
``base_time + round(n * 1000 / rate)`` ms computed in float32 as the crate does (10 ms per
event at the default rate of 100 events/s); a bid goes to a hot auction (the first of the
last batch of 100) with probability 1/2, else to one of the last 100 auctions or the 10
after them; hot sellers and bidders likewise (probability 3/4, batches of 100 people,
else one of the last 1,000 people or the 10 after); auctions last up to twice the time of
the next 1,666 events; prices are ``round(10^(6u) * 100)`` cents; strings have the crate's
lengths and alphabets. The random draws are numpy's, not the crate's ``SmallRng``, so the
values of the random columns differ from the crate's while following the same laws;
``tests/nexmark/test_generate.py`` checks the deterministic columns against a sample the
crate wrote and the random ones against the rules.

``python -m benches.nexmark.generate EVENTS OUT_DIR`` writes ``person.arrow``,
``auction.arrow`` and ``bid.arrow`` as ``rust/nexmark-gen`` does.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

__all__ = ["BASE_TIME", "SCHEMAS", "event_time", "generate", "load", "write"]

BASE_TIME = 1_700_000_000_000
"""The first event's time (ms since the epoch), a multiple of 10 s so windows start at it."""

PROPORTION = 50  # persons 1, auctions 3, bids 46 out of every 50 events
FIRST_ID = 1000  # first person id and first auction id
FIRST_CATEGORY = 10
NUM_CATEGORIES = 5
ACTIVE_PEOPLE = 1000
IN_FLIGHT_AUCTIONS = 100
ID_LEAD = 10  # person_id_lead and auction_id_lead
HOT_BATCH = 100  # HOT_SELLER_RATIO, HOT_AUCTION_RATIO, HOT_BIDDER_RATIO
CITIES = "phoenix,los angeles,san francisco,boise,portland,bend,redmond,seattle,kent,cheyenne"
STATES = "az,ca,id,or,wa,wy"
FIRST_NAMES = "peter,paul,luke,john,saul,vicky,kate,julie,sarah,deiter,walter"
LAST_NAMES = "shultz,abrams,spencer,white,bartels,walton,smith,jones,noris"
HOT_CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]
CHANNELS = 10_000

SCHEMAS: dict[str, dict[str, str]] = {
    "person": {
        "id": "int64",
        "name": "str",
        "email_address": "str",
        "credit_card": "str",
        "city": "str",
        "state": "str",
        "date_time": "int64",
        "extra": "str",
    },
    "auction": {
        "id": "int64",
        "item_name": "str",
        "description": "str",
        "initial_bid": "int64",
        "reserve": "int64",
        "date_time": "int64",
        "expires": "int64",
        "seller": "int64",
        "category": "int64",
        "extra": "str",
    },
    "bid": {
        "auction": "int64",
        "bidder": "int64",
        "price": "int64",
        "channel": "str",
        "url": "str",
        "date_time": "int64",
        "extra": "str",
    },
}
"""Each table's columns and ddflow dtypes, in file order (the crate's field names)."""

I64 = npt.NDArray[np.int64]


def event_time(n: I64, rate: int = 100, base_time: int = BASE_TIME) -> I64:
    """The time (ms) of events ``n``, in float32 as the crate computes it (so beyond ~27,000
    events at 10 ms each it drifts from ``10 n`` by a few ms, as the crate's does)."""
    delay = np.float32(np.float32(1_000_000) / np.float32(rate))
    offset = (n.astype(np.float32) * delay) / np.float32(1000.0)
    return base_time + np.floor(offset.astype(np.float64) + 0.5).astype(np.int64)


def person_last_id(n: I64) -> I64:
    """The crate's ``Person::last_id``: the newest person id (base 0) at event ``n``."""
    return n // PROPORTION


def auction_last_id(n: I64) -> I64:
    """The crate's ``Auction::last_id``: the newest auction id (base 0) at event ``n``."""
    epoch, offset = n // PROPORTION, n % PROPORTION
    before = offset < 1
    epoch = np.where(before, epoch - 1, epoch)
    offset = np.where(before | (offset >= 4), 2, offset - 1)
    return epoch * 3 + offset


def _person_next_id(n: I64, rng: np.random.Generator) -> I64:
    people = person_last_id(n) + 1
    active = np.minimum(people, ACTIVE_PEOPLE)
    return people - active + rng.integers(0, active + ID_LEAD)


def _auction_next_id(n: I64, rng: np.random.Generator) -> I64:
    top = auction_last_id(n)
    low = np.maximum(top - IN_FLIGHT_AUCTIONS, 0)
    return low + rng.integers(0, top - low + 1 + ID_LEAD)


def _price(rng: np.random.Generator, size: int) -> I64:
    u = rng.random(size, dtype=np.float32)
    cents = np.power(np.float32(10.0), u * np.float32(6.0)) * np.float32(100.0)
    return np.floor(cents.astype(np.float64) + 0.5).astype(np.int64)


def _strings(lengths: I64, data: npt.NDArray[np.uint8]) -> pa.Array:
    """A UTF-8 array whose row ``i`` is the next ``lengths[i]`` bytes of ``data``."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.StringArray.from_buffers(len(lengths), pa.py_buffer(offsets), pa.py_buffer(data))


def _letters(rng: np.random.Generator, lengths: I64) -> pa.Array:
    """Random lowercase strings of the given lengths (the crate's ``gen_exact_string``)."""
    total = int(lengths.sum())
    return _strings(lengths, rng.integers(ord("a"), ord("z") + 1, total, dtype=np.uint8))


def _extra(rng: np.random.Generator, size: int, current: I64 | int, average: int) -> pa.Array:
    """The crate's ``gen_next_extra``: letters making the row about ``average`` bytes."""
    want = np.maximum(average - np.asarray(current, dtype=np.int64), 0) * np.ones(size, np.int64)
    delta = (want + 2) // 5
    lengths = want - delta + (rng.random(size) * 2 * delta).astype(np.int64)
    lengths = np.where(np.asarray(current) > average, 0, lengths)
    return _letters(rng, lengths)


def _fixed(matrix: npt.NDArray[np.uint8]) -> pa.Array:
    """A UTF-8 array from a (rows, width) matrix of ASCII bytes."""
    rows, width = matrix.shape
    return _strings(np.full(rows, width, dtype=np.int64), np.ascontiguousarray(matrix).ravel())


def _choose(rng: np.random.Generator, words: str, size: int) -> pa.Array:
    return pa.array(words.split(",")).take(pa.array(rng.integers(0, len(words.split(",")), size)))


def _base_url(rng: np.random.Generator) -> str:
    """The crate's ``get_base_url``: three ids of 3-4 letters, each '_' with odds 1/13."""
    parts = []
    for _ in range(3):
        chars = rng.integers(ord("a"), ord("z") + 1, int(rng.integers(3, 5)))
        parts.append("".join("_" if rng.integers(0, 13) == 0 else chr(c) for c in chars))
    return "https://www.nexmark.com/{}/{}/{}/item.htm?query=1".format(*parts)


@functools.cache
def _channel_urls() -> tuple[pa.Array, pa.Array, list[str]]:
    """The crate's 10,000 channels and their urls (nine in ten with a ``channel_id``), and
    the hot channels' urls."""
    rng = np.random.default_rng(7)
    urls = []
    for i in range(CHANNELS):
        url = _base_url(rng)
        if rng.integers(0, 10) > 0:
            bits = int(f"{i:032b}"[::-1], 2)  # (i as i32).reverse_bits(), then abs
            url += f"&channel_id={abs(bits - (1 << 32) if bits >= 1 << 31 else bits)}"
        urls.append(url)
    channels = pa.array([f"channel-{i}" for i in range(CHANNELS)])
    return channels, pa.array(urls), [_base_url(rng) for _ in HOT_CHANNELS]


def _persons(n: I64, rng: np.random.Generator, times: I64) -> pa.Table:
    size = len(n)
    first, last = _choose(rng, FIRST_NAMES, size), _choose(rng, LAST_NAMES, size)
    name = pc.binary_join_element_wise(first, last, " ")
    email = rng.integers(ord("a"), ord("z") + 1, (size, 16), dtype=np.uint8)
    email[:, 7], email[:, 12:] = ord("@"), np.frombuffer(b".com", dtype=np.uint8)
    digits = rng.integers(ord("0"), ord("9") + 1, (size, 19), dtype=np.uint8)
    digits[:, [4, 9, 14]] = ord(" ")
    city, state = _choose(rng, CITIES, size), _choose(rng, STATES, size)
    lengths = [pc.binary_length(a).to_numpy() for a in (name, city, state)]
    current = 8 + 16 + 19 + lengths[0] + lengths[1] + lengths[2]
    columns = [
        person_last_id(n) + FIRST_ID,
        name,
        _fixed(email),
        _fixed(digits),
        city,
        state,
        times,
        _extra(rng, size, current, 200),
    ]
    return pa.table(columns, names=list(SCHEMAS["person"]))


def _auctions(n: I64, rng: np.random.Generator, times: I64, rate: int, base: int) -> pa.Table:
    size = len(n)
    initial = _price(rng, size)
    horizon = event_time(n + IN_FLIGHT_AUCTIONS * PROPORTION // 3, rate, base) - times
    expires = times + 1 + rng.integers(0, np.maximum(horizon * 2, 1))
    hot = rng.integers(0, 4, size) > 0
    seller = np.where(hot, person_last_id(n) // HOT_BATCH * HOT_BATCH, _person_next_id(n, rng))
    columns = [
        auction_last_id(n) + FIRST_ID,
        _letters(rng, np.full(size, 20, np.int64)),
        _letters(rng, np.full(size, 100, np.int64)),
        initial,
        initial + _price(rng, size),
        times,
        expires,
        seller + FIRST_ID,
        FIRST_CATEGORY + rng.integers(0, NUM_CATEGORIES, size),
        _extra(rng, size, 8 + 20 + 100 + 40, 500),
    ]
    return pa.table(columns, names=list(SCHEMAS["auction"]))


def _bids(n: I64, rng: np.random.Generator, times: I64) -> pa.Table:
    size = len(n)
    hot_auction = rng.integers(0, 2, size) > 0
    auction = np.where(
        hot_auction, auction_last_id(n) // HOT_BATCH * HOT_BATCH, _auction_next_id(n, rng)
    )
    hot_bidder = rng.integers(0, 4, size) > 0
    bidder = np.where(
        hot_bidder, person_last_id(n) // HOT_BATCH * HOT_BATCH + 1, _person_next_id(n, rng)
    )
    channels, urls, hot_urls = _channel_urls()
    hot = rng.integers(0, 2, size) > 0
    pick = np.where(hot, rng.integers(0, len(HOT_CHANNELS), size), rng.integers(0, CHANNELS, size))
    all_channels = pa.concat_arrays([pa.array(HOT_CHANNELS), channels])
    all_urls = pa.concat_arrays([pa.array(hot_urls), urls])
    index = pa.array(np.where(hot, pick, pick + len(HOT_CHANNELS)))
    columns = [
        auction + FIRST_ID,
        bidder + FIRST_ID,
        _price(rng, size),
        all_channels.take(index),
        all_urls.take(index),
        times,
        _extra(rng, size, 32, 100),
    ]
    return pa.table(columns, names=list(SCHEMAS["bid"]))


def generate(
    events: int, seed: int = 0, rate: int = 100, base_time: int = BASE_TIME, first: int = 0
) -> dict[str, pa.Table]:
    """Events ``first .. first + events - 1`` as three tables, ``person``, ``auction`` and
    ``bid``, each in event order."""
    n = np.arange(first, first + events, dtype=np.int64)
    rng = np.random.default_rng([seed, first])
    times = event_time(n, rate, base_time)
    kind = n % PROPORTION
    p, a, b = kind == 0, (kind >= 1) & (kind <= 3), kind >= 4
    return {
        "person": _persons(n[p], rng, times[p]),
        "auction": _auctions(n[a], rng, times[a], rate, base_time),
        "bid": _bids(n[b], rng, times[b]),
    }


def write(tables: dict[str, pa.Table], out: Path) -> None:
    """Writes each table as ``OUT/<name>.arrow`` (Arrow IPC file format)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        with pa.OSFile(str(out / f"{name}.arrow"), "wb") as sink:
            with ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table, max_chunksize=1 << 16)


def load(directory: Path, columns: dict[str, list[str]] | None = None) -> dict[str, pa.Table]:
    """Reads ``person.arrow``, ``auction.arrow`` and ``bid.arrow`` from ``directory``
    (memory-mapped), keeping only ``columns[name]`` where given."""
    tables = {}
    for name in SCHEMAS:
        path = directory / f"{name}.arrow"
        if not path.exists():
            raise FileNotFoundError(f"nexmark: no {path} (write it with nexmark-gen)")
        table = ipc.open_file(pa.memory_map(str(path))).read_all()
        if columns is not None and name in columns:
            table = table.select(columns[name])
        tables[name] = table
    return tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("events", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=int, default=100, help="events per second of event time")
    args = parser.parse_args()
    tables = generate(args.events, args.seed, args.rate)
    write(tables, args.out)
    print(
        f"nexmark: {args.events} events -> {args.out}: "
        + ", ".join(f"{len(t)} {name}s" for name, t in tables.items())
    )


if __name__ == "__main__":
    main()
