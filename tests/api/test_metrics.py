"""``flow.metrics()`` and ``dd.serve_metrics``: per-operator counts against counts known from
the data (distinct records pushed, groups produced), frontier lag before and after the engine
catches up, and the Prometheus endpoint scraped over HTTP, also while ``flow.run()`` works in
another thread."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families

import ddflow as dd
from ddflow.sources import Source, SourceBatch

pytestmark = pytest.mark.timeout(60)


def _flow(log: bool = True) -> tuple[dd.Dataflow, dd.InputSession, dd.Capture]:
    flow = dd.Dataflow(log=log)
    session, rows = flow.new_input({"k": "int64", "v": "int64"})
    per_key = rows.group_by("k").agg(n=dd.count(), s=dd.sum("v"))
    return flow, session, per_key.capture()


def _node(flow: dd.Dataflow, op: str) -> int:
    (node,) = [n["id"] for n in flow.builder.plan.nodes if n["op"] == op]
    return int(node)


def _push(session: dd.InputSession, n: int, keys: int, time: int, start: int = 0) -> None:
    k = np.arange(n, dtype=np.int64) % keys
    v = np.arange(start, start + n, dtype=np.int64)
    session.update_batch(pa.table({"k": k, "v": v}), times=time)


def test_counts_match_the_data() -> None:
    flow, session, cap = _flow()
    assert all(m.invocations is None for m in flow.metrics().operators)  # not started
    _push(session, 1000, 7, 0)
    session.advance_to(1)
    flow.run_until(1)
    _push(session, 500, 7, 1, start=1000)  # records distinct from time 0's
    session.advance_to(2)
    flow.run_until(2)
    m = flow.metrics()
    arrange = m.operator(_node(flow, "arrange"))
    reduce = m.operator(_node(flow, "reduce"))
    capture = m.operator(_node(flow, "capture"))
    assert arrange.records_in == 1500  # distinct records
    assert arrange.arrangement_records == 1500
    assert arrange.invocations is not None and arrange.invocations >= 2
    # 7 groups at time 0, then each group's count changes at time 1: -old, +new.
    assert reduce.records_out == 7 + 14 == len(cap.updates())
    assert capture.records_in == reduce.records_out
    assert all(o.seconds is not None and o.seconds >= 0 for o in m.operators)
    assert not any(o.python for o in m.operators)
    assert m.input_frontier == 2 and all(o.frontier_lag == 0 for o in m.operators)
    assert m.heap_bytes > 0 and m.passes > 0
    table = m.table()
    assert table.num_rows == len(flow.builder.plan.nodes)
    assert table["records_in"].to_pylist()[arrange.node] == 1500


def test_frontier_lag_until_the_engine_catches_up() -> None:
    flow, session, _ = _flow()
    _push(session, 10, 3, 0)
    session.advance_to(1)
    flow.run_until(1)
    session.advance_to(40)
    lagging = flow.metrics()
    assert lagging.input_frontier == 40
    assert lagging.operator(_node(flow, "capture")).frontier == [(1,)]
    assert lagging.operator(_node(flow, "capture")).frontier_lag == 39
    assert lagging.operator(0).frontier == [(40,)] and lagging.operator(0).frontier_lag == 0
    flow.run_until(40)
    assert all(o.frontier_lag == 0 for o in flow.metrics().operators)
    session.close()
    flow.run()
    done = flow.metrics()
    assert done.input_frontier is None
    assert all(o.frontier == [] and o.frontier_lag == 0 for o in done.operators)


def test_without_the_log_only_sizes_and_frontiers() -> None:
    flow, session, _ = _flow(log=False)
    _push(session, 100, 5, 0)
    session.advance_to(1)
    flow.run_until(1)
    m = flow.metrics()
    assert not m.logging
    assert all(o.records_in is None and o.seconds is None for o in m.operators)
    assert m.operator(_node(flow, "arrange")).arrangement_records == 100


def test_heap_bytes_per_node() -> None:
    flow, session, _ = _flow(log=False)
    assert all(o.heap_bytes == 0 == o.queued_bytes for o in flow.metrics().operators)
    big = 1 << 40  # values far above string ids (the string collector marks conservatively)
    _push(session, 10_000, 50, 0, start=big)
    session.advance_to(1)
    flow.run_until(1)
    m = flow.metrics()
    arrange, reduce = m.operator(_node(flow, "arrange")), m.operator(_node(flow, "reduce"))
    # 10,000 distinct values under 50 keys: at least a narrow (4-byte) word each.
    assert arrange.heap_bytes >= 10_000 * 4 and reduce.heap_bytes > 0
    assert sum(o.heap_bytes for o in m.operators) == m.heap_bytes
    assert all(o.queued_bytes == 0 for o in m.operators)  # run_until took every input
    _push(session, 1000, 50, 1, start=big + 10_000)
    session.advance_to(2)
    waiting = flow.metrics()
    # Pushed, not yet run: 1,000 rows of two words and a diff wait at the arrange.
    assert waiting.operator(arrange.node).queued_bytes >= 1000 * 3 * 8
    assert waiting.operator(arrange.node).heap_bytes == arrange.heap_bytes
    flow.run_until(2)
    done = flow.metrics()
    assert done.operator(arrange.node).heap_bytes > arrange.heap_bytes
    assert all(o.queued_bytes == 0 for o in done.operators)
    assert done.table()["heap_bytes"].to_pylist() == [o.heap_bytes for o in done.operators]


def _scrape(url: str) -> dict[tuple[str, str], float]:
    """``(sample name, node)`` -> value ("" for samples without a node label)."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, sample.labels.get("node", ""))] = sample.value
    return out


class Batches(Source):
    """Sends ``count`` batches of ``size`` rows, one per poll, waiting ``pause`` seconds
    between them."""

    name = "batches"

    def __init__(self, count: int, size: int, pause: float = 0.0) -> None:
        self.count, self.size, self.pause, self.sent = count, size, pause, 0
        self.next = 0.0

    def poll(self) -> list[SourceBatch]:
        if self.sent == self.count or time.monotonic() < self.next:
            return []
        self.next = time.monotonic() + self.pause
        start = self.sent * self.size
        v = np.arange(start, start + self.size, dtype=np.int64)
        self.sent += 1
        return [SourceBatch(pa.table({"k": v % 11, "v": v}), "batches")]

    @property
    def ended(self) -> bool:
        return self.sent == self.count

    def size(self) -> int:
        return self.count * self.size

    def progress(self) -> int:
        return self.sent * self.size


def test_the_endpoint_serves_known_counts() -> None:
    flow, session, cap = _flow()
    flow.attach_source(session, Batches(4, 250))
    with dd.serve_metrics(flow, port=0) as server:
        before = _scrape(server.url)
        assert ("ddflow_operator_records_in_total", "1") not in before  # not started
        flow.run()
        after = _scrape(server.url)
    arrange, capture = str(_node(flow, "arrange")), str(_node(flow, "capture"))
    assert after[("ddflow_operator_records_in_total", arrange)] == 1000
    assert after[("ddflow_arrangement_records", arrange)] == 1000
    assert after[("ddflow_operator_records_in_total", capture)] == len(cap.updates())
    assert after[("ddflow_source_rows_total", "")] == 1000
    assert after[("ddflow_heap_bytes", "")] > 0
    assert after[("ddflow_metrics_age_seconds", "")] < 5


@pytest.mark.timeout(90)
def test_scrapes_while_the_run_works_in_another_thread() -> None:
    flow, session, cap = _flow()
    flow.attach_source(session, Batches(30, 2000, pause=0.02))
    seen: list[float] = []
    failures: list[BaseException] = []
    with dd.serve_metrics(flow, port=0) as server:
        arrange = str(_node(flow, "arrange"))
        done = threading.Event()

        def scrape() -> None:
            try:
                while not done.is_set():
                    value = _scrape(server.url).get(("ddflow_operator_records_in_total", arrange))
                    if value is not None:
                        seen.append(value)
            except BaseException as exc:  # reported in the main thread
                failures.append(exc)

        scraper = threading.Thread(target=scrape)
        scraper.start()
        try:
            flow.run()
        finally:
            done.set()
            scraper.join()
        final = _scrape(server.url)
    assert not failures, failures
    assert len(seen) >= 2
    assert seen == sorted(seen)  # a counter never goes back
    assert final[("ddflow_operator_records_in_total", arrange)] == 60_000
    assert Counter(cap.state()["n"].to_pylist()) == Counter(
        Counter(i % 11 for i in range(60_000)).values()
    )
