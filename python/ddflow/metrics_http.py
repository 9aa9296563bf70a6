"""``dd.serve_metrics(flow, port)``: a dataflow's metrics over HTTP in Prometheus' text format.

A custom collector (``prometheus-client``, the extra ``ddflow[metrics]``) reads
``flow.metrics()`` when Prometheus scrapes, in the server's thread. The engine must not be
read while another thread drives it, so the collector takes the run loop's lock
(:attr:`ddflow.runloop.RunLoop.lock`), which ``flow.run()`` holds while it works and frees
while it waits for data: a scrape during a long tick waits for its end, up to
``lock_timeout`` seconds, then serves the last snapshot (its age in
``ddflow_metrics_age_seconds``). A dataflow driven by hand (``run_until``, ``step``) holds no
lock: scrape it between those calls, or read ``flow.metrics()`` in the driving thread.

The series (labels ``node``, ``op``, ``label`` per operator):

=====================================  =========  ==============================================
``ddflow_operator_records_in_total``   counter    updates the operator took in
``ddflow_operator_records_out_total``  counter    updates it produced
``ddflow_operator_invocations_total``  counter    times the engine ran it
``ddflow_operator_seconds_total``      counter    time spent in it
``ddflow_arrangement_records``         gauge      updates an arrangement's trace holds
``ddflow_operator_frontier_lag``       gauge      how far it trails the inputs' frontier
``ddflow_input_frontier``              gauge      the least frontier of the open inputs
``ddflow_heap_bytes``                  gauge      heap bytes of the engine's traces
``ddflow_scheduler_passes_total``      counter    the engine's scheduling passes
``ddflow_source_rows_total``           counter    rows the sources handed over
``ddflow_metrics_age_seconds``         gauge      age of the snapshot served
=====================================  =========  ==============================================

The operator counters are there while the dataflow keeps its operator log (the default).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ddflow.metrics import Metrics

if TYPE_CHECKING:
    from ddflow.dataflow import Dataflow

__all__ = ["MetricsServer", "serve_metrics"]


class DataflowCollector:
    """A Prometheus collector reading a dataflow's metrics at scrape time."""

    def __init__(self, flow: Dataflow, prefix: str = "ddflow", lock_timeout: float = 5.0) -> None:
        self.flow = flow
        self.prefix = prefix
        self.lock_timeout = lock_timeout
        self._last: Metrics | None = None
        self._last_at = time.monotonic()
        self._rows = 0

    def snapshot(self) -> tuple[Metrics | None, float]:
        """Fresh metrics when the engine is free within ``lock_timeout``, else the last
        ones; and their age in seconds."""
        lock = self.flow._loop.lock
        if lock.acquire(timeout=self.lock_timeout):
            try:
                self._last = self.flow.metrics()
                self._last_at = time.monotonic()
                self._rows = self.flow._loop.rows_read
            except Exception:  # driven by hand from another thread right now: serve the last
                pass
            finally:
                lock.release()
        return self._last, time.monotonic() - self._last_at

    def collect(self) -> Iterator[Any]:
        """The metric families (``prometheus_client``'s collector protocol)."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        metrics, age = self.snapshot()
        p = self.prefix
        labels = ["node", "op", "label"]
        counters = {
            "records_in": CounterMetricFamily(
                f"{p}_operator_records_in", "Updates the operator took in", labels=labels
            ),
            "records_out": CounterMetricFamily(
                f"{p}_operator_records_out", "Updates the operator produced", labels=labels
            ),
            "invocations": CounterMetricFamily(
                f"{p}_operator_invocations", "Times the engine ran the operator", labels=labels
            ),
            "seconds": CounterMetricFamily(
                f"{p}_operator_seconds", "Time spent in the operator", labels=labels
            ),
        }
        records = GaugeMetricFamily(
            f"{p}_arrangement_records", "Updates an arrangement's trace holds", labels=labels
        )
        lag = GaugeMetricFamily(
            f"{p}_operator_frontier_lag",
            "How far the operator trails the inputs' frontier (time units; ms under run())",
            labels=labels,
        )
        if metrics is not None:
            for m in metrics.operators:
                values = [str(m.node), m.op, m.label]
                for name, family in counters.items():
                    value = getattr(m, name)
                    if value is not None:
                        family.add_metric(values, float(value))
                if m.arrangement_records is not None:
                    records.add_metric(values, float(m.arrangement_records))
                if m.frontier_lag is not None:
                    lag.add_metric(values, float(m.frontier_lag))
        yield from counters.values()
        yield records
        yield lag
        if metrics is not None:
            if metrics.input_frontier is not None:
                yield GaugeMetricFamily(
                    f"{p}_input_frontier",
                    "The least frontier of the open inputs",
                    value=float(metrics.input_frontier),
                )
            yield GaugeMetricFamily(
                f"{p}_heap_bytes", "Heap bytes of the engine's traces", value=metrics.heap_bytes
            )
            yield CounterMetricFamily(
                f"{p}_scheduler_passes", "The engine's scheduling passes", value=metrics.passes
            )
        yield CounterMetricFamily(
            f"{p}_source_rows", "Rows the sources handed over", value=float(self._rows)
        )
        yield GaugeMetricFamily(f"{p}_metrics_age_seconds", "Age of the snapshot served", value=age)


class MetricsServer:
    """The HTTP server of :func:`serve_metrics`: its ``port``, and ``close()``."""

    def __init__(self, server: Any, thread: threading.Thread, collector: DataflowCollector):
        self._server = server
        self._thread = thread
        self.collector = collector
        self.port: int = int(server.server_port)
        """The port it listens on (the one chosen when ``port=0``)."""

    @property
    def url(self) -> str:
        """The metrics URL on the local host."""
        return f"http://127.0.0.1:{self.port}/metrics"

    def close(self) -> None:
        """Stops serving and frees the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_metrics(
    flow: Dataflow, port: int = 9464, addr: str = "127.0.0.1", lock_timeout: float = 5.0
) -> MetricsServer:
    """Serves ``flow``'s metrics (``flow.metrics()``) in Prometheus' text format at
    ``http://addr:port/metrics``, from a daemon thread, until ``close()``; ``port=0`` picks
    a free port (``server.port``). Each scrape reads the dataflow between two ticks of
    ``flow.run()`` (see :mod:`ddflow.metrics_http`). Needs ``prometheus-client`` (the extra
    ``ddflow[metrics]``)."""
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    collector = DataflowCollector(flow, lock_timeout=lock_timeout)
    registry.register(collector)
    server, thread = start_http_server(port, addr=addr, registry=registry)
    return MetricsServer(server, thread, collector)
