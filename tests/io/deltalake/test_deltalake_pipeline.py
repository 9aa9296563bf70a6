"""A Delta table followed by ddflow through a join and a group-by, into two Delta sinks.

The source table changes step by step (appends, then ``update``, ``delete`` and ``merge``),
with and without the change data feed; after every version the source hands over, the keyed
sink's table must equal what DuckDB computes from the source table at that version, and the
update sink's commits must accumulate to the same rows. A random sequence of changes is
checked the same way.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from tests.io.deltalake.helpers import (
    Steps,
    accumulate,
    delete_with_deletion_vector,
    multiset,
    table_at,
)

import ddflow as dd

pytestmark = pytest.mark.timeout(120)

COLUMNS = ["name", "total", "n"]


def _facts(rows: list[tuple[int, str, int]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "region": pa.array([r[1] for r in rows], pa.string()),
            "qty": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


def _expected(facts: pa.Table, regions: pa.Table) -> pa.Table:
    """DuckDB's recompute: quantity and row count per region name."""
    return duckdb.sql(
        """
        select r.name as name, sum(f.qty)::bigint as total, count(*)::bigint as n
        from facts f join regions r on f.region = r.region group by r.name
        """
    ).arrow()


def _run(
    tmp_path: Path,
    cdf: bool,
    steps: list[Callable[[str], Any]],
    partitioned: bool = False,
    deletion_vectors: bool = False,
) -> list[int]:
    facts_uri, regions_uri = str(tmp_path / "facts"), str(tmp_path / "regions")
    updates_uri, keyed_uri = str(tmp_path / "updates"), str(tmp_path / "keyed")
    config = {"delta.enableChangeDataFeed": "true"} if cdf else {}
    if deletion_vectors:
        config["delta.enableDeletionVectors"] = "true"
    write_deltalake(
        facts_uri,
        _facts([(1, "n", 5), (2, "s", 7), (3, "n", 1), (4, "e", 2)]),
        configuration=config,
        partition_by=["region"] if partitioned else None,
    )
    regions = pa.table(
        {"region": ["n", "s", "e", "w"], "name": ["North", "South", "East", "South"]}
    )
    write_deltalake(regions_uri, regions)

    def check(version: int) -> None:
        facts = table_at(facts_uri, version)  # noqa: F841 (read by DuckDB)
        expected = multiset(_expected(facts, regions), COLUMNS)
        assert multiset(table_at(keyed_uri), COLUMNS) == expected, f"version {version}"
        assert accumulate(table_at(updates_uri), COLUMNS) == expected, f"version {version}"

    flow = dd.Dataflow()
    stepper = Steps(flow, facts_uri, [lambda s=s: s(facts_uri) for s in steps], check)
    facts = dd.io.deltalake.read(flow, facts_uri, watch=True)
    names = dd.io.deltalake.read(flow, regions_uri)
    per_name = (
        facts.join(names, on="region").group_by("name").agg(total=dd.sum("qty"), n=dd.count())
    )
    dd.io.deltalake.write(per_name, updates_uri)
    dd.io.deltalake.write(per_name, keyed_uri, primary_key=["name"])
    flow.run()
    assert len(flow.errors()) == 0
    history = DeltaTable(keyed_uri).history()
    assert all("ddflow.time" in h for h in history if h["operation"] == "MERGE")
    # The update sink's commits tile the completed times: each starts where the last ended.
    writes = sorted(
        (h for h in DeltaTable(updates_uri).history() if "ddflow.lower" in h),
        key=lambda h: h["version"],
    )
    ranges = [(int(h["ddflow.lower"]), int(h["ddflow.upper"])) for h in writes]
    assert ranges[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    times = table_at(updates_uri)["time"].to_pylist()
    assert all(t < ranges[-1][1] for t in times)
    return stepper.checked


@pytest.mark.parametrize(
    ("cdf", "partitioned"),
    [(True, False), (False, False), (False, True)],
    ids=["change-data-feed", "file-diff", "file-diff-partitioned"],
)
def test_each_version_reaches_both_sinks(tmp_path: Path, cdf: bool, partitioned: bool) -> None:
    steps: list[Callable[[str], Any]] = [
        lambda u: write_deltalake(u, _facts([(5, "w", 3), (6, "n", 4)]), mode="append"),
        lambda u: DeltaTable(u).update({"qty": "qty + 10"}, predicate="region = 'n'"),
        lambda u: DeltaTable(u).delete("id = 2"),
        lambda u: (
            DeltaTable(u)
            .merge(_facts([(1, "s", 9), (7, "e", 1)]), "t.id = s.id", "s", "t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        ),
        lambda u: DeltaTable(u).delete("region = 'e'"),
        lambda u: write_deltalake(u, _facts([(8, "s", 2)]), mode="append"),
        lambda u: DeltaTable(u).optimize.compact(),  # rows leave and come back: no change
    ]
    checked = _run(tmp_path, cdf, steps, partitioned)
    assert checked == list(range(len(steps) + 1))
    history = DeltaTable(str(tmp_path / "facts")).history(1)
    assert history[0]["operation"] == "OPTIMIZE"


def _random_step(rng: random.Random, next_id: list[int]) -> Callable[[str], Any]:
    kind = rng.choice(["append", "append", "update", "delete", "merge"])
    region = rng.choice("nsew")
    if kind == "append":
        rows = []
        for _ in range(rng.randint(1, 5)):
            rows.append((next_id[0], rng.choice("nsewx"), rng.randint(-3, 9)))
            next_id[0] += 1
        return lambda u: write_deltalake(u, _facts(rows), mode="append")
    if kind == "update":
        delta = rng.randint(1, 4)
        return lambda u: DeltaTable(u).update(
            {"qty": f"qty + {delta}"}, predicate=f"region = '{region}'"
        )
    if kind == "delete":
        cut = rng.randint(0, next_id[0])
        return lambda u: DeltaTable(u).delete(f"id < {cut} and region = '{region}'")
    ids = [rng.randint(0, next_id[0] + 2) for _ in range(3)]
    rows = [(i, rng.choice("nsew"), rng.randint(0, 5)) for i in sorted(set(ids))]
    return lambda u: (
        DeltaTable(u)
        .merge(_facts(rows), "t.id = s.id", "s", "t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("cdf", [True, False], ids=["change-data-feed", "file-diff"])
def test_random_changes_match_the_recompute(tmp_path: Path, cdf: bool, seed: int) -> None:
    rng = random.Random(seed)
    next_id = [10]
    steps = [_random_step(rng, next_id) for _ in range(8)]
    checked = _run(tmp_path, cdf, steps)
    assert checked[-1] == DeltaTable(str(tmp_path / "facts")).version()


def _delete_rows_of_the_largest_file(u: str, rows: list[int]) -> None:
    actions = pa.table(DeltaTable(u).get_add_actions(flatten=True))
    largest = max(actions.to_pylist(), key=lambda a: a["num_records"])
    delete_with_deletion_vector(u, largest["path"], rows)


def test_deletion_vectors_without_the_change_data_feed(tmp_path: Path) -> None:
    steps: list[Callable[[str], Any]] = [
        lambda u: _delete_rows_of_the_largest_file(u, [1]),
        lambda u: write_deltalake(u, _facts([(5, "w", 3), (6, "n", 4)]), mode="append"),
        lambda u: _delete_rows_of_the_largest_file(u, [0, 1, 3]),
        lambda u: DeltaTable(u).delete("id = 5"),  # delta-rs rewrites the file instead
        lambda u: write_deltalake(u, _facts([(7, "s", 1)]), mode="append"),
    ]
    checked = _run(tmp_path, False, steps, deletion_vectors=True)
    assert checked == list(range(len(steps) + 1))
