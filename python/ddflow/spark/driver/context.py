"""What the driver's parts share about one run: the Spark session, the plan and the nodes the
outputs need, the run's options (time coordinates, key partitions, error mode, where reduce
state lives), the user functions, the measurements, the collected error rows and the notes
``explain()`` shows. Each part of the driver takes this and the few collaborators it uses,
never the whole compiler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from ddflow.plan import EnterArrangementOp, Plan
from ddflow.spark.driver.error_frames import ErrorFrames
from ddflow.spark.driver.progress import Meter
from ddflow.spark.tasks.batches import FnTable, tcol

__all__ = ["ERROR_MODES", "RunContext", "key_partitions"]

ERROR_MODES = ("raise", "collect")
"""``run_on_spark(errors=...)``: fail the job on a data error, or keep it as an error row."""


def key_partitions(spark: SparkSession, partitions: int | None) -> int:
    """The number of key partitions: ``partitions``, else ``spark.sql.shuffle.partitions``."""
    return int(partitions or spark.conf.get("spark.sql.shuffle.partitions") or 8)


@dataclass
class RunContext:
    """One run's shared facts and notes (see the module doc)."""

    spark: SparkSession
    plan: Plan
    needed: set[int]
    """The plan nodes the outputs depend on."""
    dims: int
    """Outer time coordinates."""
    partitions: int
    """Key partitions (and state store buckets)."""
    fns: FnTable
    meter: Meter | None
    errors: ErrorFrames
    collect: bool = False
    """Data errors become error rows (``error_frames.py``) instead of failing the job."""
    reduce_state: str = "store"
    """Where a reduce inside an iterate keeps its state (``REDUCE_STATE_MODES``)."""
    stages: list[str] = field(default_factory=list)
    """How each node was compiled (``SparkResult.explain``)."""
    iteration: int | None = None
    """The superstep being compiled (None outside iterates): the iteration of its errors."""

    @property
    def nodes(self) -> list[dict[str, Any]]:
        """The plan's nodes (JSON dicts), by id."""
        return self.plan.nodes

    def inputs(self, n: int) -> list[int]:
        """The input nodes of node ``n``."""
        return list(self.plan.nodes[n]["inputs"])

    def label(self, n: int) -> str:
        """Node ``n``'s label, for messages."""
        return str(self.plan.nodes[n]["label"])

    def columns(self, n: int) -> list[str]:
        """Node ``n``'s output column names."""
        return list(self.plan.nodes[n]["columns"])

    def tnames(self) -> list[str]:
        """The outer time coordinate columns."""
        return [tcol(j) for j in range(self.dims)]

    def key_len(self, n: int) -> int:
        """The key length of arrangement ``n`` (through ``enter_arrangement``)."""
        node = self.plan.nodes[n]
        while node["op"] == EnterArrangementOp.OP:
            node = self.plan.nodes[node["inputs"][0]]
        return len(node["key"])

    def note(self, n: int, how: str) -> None:
        """Records how node ``n`` was compiled (``SparkResult.explain``)."""
        node = self.plan.nodes[n]
        self.stages.append(f"#{n} {node['op']} ({node['label']}): {how}")
