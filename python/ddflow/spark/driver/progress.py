"""Progress output of the Spark backend: per-phase measurements and the one line per
superstep printed while a run goes on.

Every session gives each phase's wall time and the updates a superstep fed back (read from
the job that cut its output). A classic session adds Spark's own figures (jobs, shuffle
bytes, stage and task time, from its status store), best effort: a Spark Connect session
has no SparkContext to ask, and the backend needs none of them to run.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark import SparkContext
from pyspark.sql import SparkSession

from ddflow.errors import DataError
from ddflow.spark.tasks.error_rows import DATA_ERROR

__all__ = ["Superstep", "Meter", "data_error", "classic_context", "is_connect"]

_DRAIN_MS = 10_000
"""How long a phase's measurement waits for Spark's listener bus to deliver its events."""


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (``SparkSession.builder.remote``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def classic_context(spark: SparkSession) -> SparkContext | None:
    """The SparkContext of a classic session; None for a Spark Connect session, which has
    none (the backend runs on the DataFrame API alone; only ``Meter``'s optional figures
    read a context)."""
    if is_connect(spark):
        return None
    try:
        return spark.sparkContext
    except Exception:  # another remote session type without a context
        return None


def data_error(exc: BaseException) -> DataError | None:
    """The ``DataError`` a Spark task raised, found in the text of the job's failure (Spark
    re-raises a task's Python exception as text), or None."""
    text = str(exc)
    at = text.find(DATA_ERROR)
    if at < 0:
        return None
    lines = [text[at:].splitlines()[0]]
    for line in text[at:].splitlines()[1:]:
        if not line.startswith("  "):
            break
        lines.append(line)
    return DataError("\n".join(lines))


@dataclass
class Superstep:
    """Measurements of one phase of a run: the top level before the loop, one superstep, or
    the outputs."""

    phase: str
    iteration: int | None
    seconds: float
    rows_fed_back: int | None
    """Updates the superstep feeds back to the variable (the only number collected)."""
    shuffle_read: int
    shuffle_write: int
    jobs: int
    stage_seconds: float = 0.0
    """Summed wall time of the phase's Spark stages (the rest is driver time: planning,
    Python, job scheduling)."""
    task_seconds: float = 0.0
    """Summed executor run time of the phase's tasks."""
    stage_ids: tuple[int, ...] = ()
    """The Spark stages the phase ran (for Spark's UI or status store)."""
    measured: bool = True
    """Whether Spark's figures (jobs, shuffle bytes, stage and task time) were read: a
    classic session; on Spark Connect they are 0."""

    def line(self) -> str:
        """One progress line."""
        rows = "" if self.rows_fed_back is None else f", {self.rows_fed_back} updates fed back"
        if not self.measured:
            return f"{self.phase}: {self.seconds:.2f} s{rows}"
        return (
            f"{self.phase}: {self.seconds:.2f} s{rows}, shuffle write "
            f"{self.shuffle_write:,} B, read {self.shuffle_read:,} B, {self.jobs} jobs "
            f"(stages {self.stage_seconds:.2f} s, tasks {self.task_seconds:.2f} s)"
        )


class Meter:
    """Runs phases under their own Spark job group and measures them."""

    def __init__(self, spark: SparkSession, log: Callable[[str], None] | None) -> None:
        self.sc = classic_context(spark)
        """The session's SparkContext (its job groups and status store), None on Connect."""
        self.log = log
        self.phases: list[Superstep] = []
        self._n = 0

    def run(self, phase: str, iteration: int | None, body: Callable[[], int | None]) -> int | None:
        """Runs ``body`` (returning the updates fed back, or None) as phase ``phase``."""
        self._n += 1
        group = f"ddflow-{id(self)}-{self._n}"
        if self.sc is not None:
            self.sc.setJobGroup(group, f"ddflow {phase}")
        start = _time.perf_counter()
        try:
            rows = body()
        except Exception as exc:
            found = data_error(exc)
            if found is not None:
                raise found from None
            raise
        finally:
            if self.sc is not None:
                self.sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        secs = _time.perf_counter() - start
        if self.sc is None:
            step = Superstep(phase, iteration, secs, rows, 0, 0, 0, measured=False)
        else:
            step = Superstep(phase, iteration, secs, rows, *self._stages(self.sc, group))
        self.phases.append(step)
        if self.log is not None:
            self.log(step.line())
        return rows

    @staticmethod
    def _stages(
        sc: SparkContext, group: str
    ) -> tuple[int, int, int, float, float, tuple[int, ...]]:
        """Shuffle read and write bytes, jobs, stage wall seconds, task seconds and stage ids
        of a job group (a classic session's status store)."""
        try:
            # The status store is filled by Spark's listener bus, asynchronously: without
            # draining it, a job that just ended may not be listed yet.
            sc._jsc.sc().listenerBus().waitUntilEmpty(_DRAIN_MS)
        except Exception:  # pragma: no cover - best effort, as every figure here
            pass
        tracker = sc.statusTracker()
        jobs = tracker.getJobIdsForGroup(group)
        stages: set[int] = set()
        for j in jobs:
            info = tracker.getJobInfo(j)
            if info is not None:
                stages.update(info.stageIds)
        read = write = 0
        stage_ms = task_ms = 0
        try:
            store = sc._jsc.sc().statusStore()
            jvm = sc._jvm
            empty = jvm.java.util.Collections.emptyList()  # type: ignore[union-attr]
            quantiles = sc._gateway.new_array(jvm.double, 0)  # type: ignore[union-attr]
            for s in stages:
                try:
                    data = store.stageAttempt(s, 0, False, empty, False, quantiles)._1()
                except Exception:  # a skipped stage has no attempt
                    continue
                read += int(data.shuffleReadBytes())
                write += int(data.shuffleWriteBytes())
                task_ms += int(data.executorRunTime())
                first, done = data.firstTaskLaunchedTime(), data.completionTime()
                if first.isDefined() and done.isDefined():
                    stage_ms += int(done.get().getTime()) - int(first.get().getTime())
        except Exception:  # pragma: no cover - metrics are best effort
            pass
        return read, write, len(jobs), stage_ms / 1000, task_ms / 1000, tuple(sorted(stages))
