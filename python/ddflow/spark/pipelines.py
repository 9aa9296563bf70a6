"""Incremental materialized views for Spark Declarative Pipelines (``spark-pipelines``).

A pipeline's definitions file calls ``refresh(spark, build, sources={...}, state=path)`` at
module level, and its ``@dp.materialized_view`` query function returns
``accumulated(spark, build, state)``:

1. ``refresh`` lists each source directory (Parquet or JSON files that are only ever added)
   and reads only the files no earlier refresh consumed, as updates at one new time (the
   stored frontier; ``diff`` 1, or the file's own ``diff`` column); it runs the dataflow
   ``build`` makes on those rows with ``run_on_spark(..., state=...)``, which continues from
   the stored arrangements and commits the run's output updates together with the new
   state;
2. ``accumulated`` is a DataFrame of the accumulated output, the record columns and
   ``diff`` (its multiplicity), as the embedded engine's ``capture().state()`` gives it: the
   sum of every committed run's output updates. It reads ddflow's stored outputs, never the
   sources, and builds its plan without analysing it.

Why two calls: SDP calls a query function while registering the graph, on the client, and
refuses any analysis or execution there (``[ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION]
Operations that trigger DataFrame analysis or execution are not allowed in pipeline query
functions. Move code outside of the pipeline query function.``); the module level of a
definitions file may run jobs. ``spark-pipelines dry-run`` imports the file too, so it
refreshes the state as well.

Layout under ``state``: ``ddflow/`` (``run_on_spark``'s state) and ``sources/``: per run
time ``t``, ``t00000003.json`` naming the files that run consumed. A refresh first writes
its list as an attempt (``t00000003-<id>.attempt.json``) and, once its run committed, the
final file; an attempt whose run committed but whose final file is missing (the process
died between the two) is taken as the final one when it is the only attempt for that time,
and is an error otherwise. Refreshes of one view run one at a time: a second concurrent one
fails on commit (``StateConflictError``) and its attempt is never taken.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError
from ddflow.input import InputSession
from ddflow.spark.driver.runner import run_on_spark
from ddflow.spark.driver.stored_state import Manifest, StateDir, StateError
from ddflow.spark.tasks.batches import DIFF, ccol

__all__ = ["Source", "Refresh", "refresh", "accumulated"]

FORMATS = ("parquet", "json")
STATE = "ddflow"
SOURCES = "sources"

Build = Callable[[Dataflow], tuple[Mapping[str, InputSession], Collection]]
"""Builds the view's dataflow: its inputs by source name, and the one output."""


@dataclass(frozen=True)
class Source:
    """A directory of files (``format``: ``"parquet"`` or ``"json"``, one JSON object a
    line) that only ever gains files; ``schema`` (a DDL string, such as ``"src long, dst
    long"``) is the record columns the input takes, plus ``diff long`` when the files carry
    each row's multiplicity (default 1)."""

    path: str
    schema: str
    format: str = "parquet"


@dataclass(frozen=True)
class Refresh:
    """What one refresh did: its time (``None``: no new file, nothing ran), and per source
    the files and rows it read."""

    time: int | None
    files: dict[str, list[str]]
    rows: dict[str, int]


def _fs(root: str) -> tuple[pafs.FileSystem, str]:
    if "://" in root and not root.startswith("file://"):
        fs, path = pafs.FileSystem.from_uri(root)
        return fs, str(path)
    local = root[len("file://") :] if root.startswith("file://") else root
    return pafs.LocalFileSystem(), os.path.abspath(local)


def _uri(root: str, path: str) -> str:
    """``path`` (as the file system lists it) as Spark reads it."""
    if "://" in root and not root.startswith("file://"):
        scheme = root.split("://", 1)[0]
        return f"{scheme}://{path}" if not path.startswith(f"{scheme}://") else path
    return path


def _read_json(fs: pafs.FileSystem, path: str) -> Any:
    with fs.open_input_stream(path) as f:
        return json.loads(f.read().decode())


def _write_json(fs: pafs.FileSystem, path: str, value: Any) -> None:
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    with fs.open_output_stream(tmp) as out:
        out.write(json.dumps(value, indent=1, sort_keys=True).encode())
    fs.move(tmp, path)


class _Ledger:
    """Which source files each run time consumed (``sources/`` under the state path)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.fs, self.path = _fs(f"{root.rstrip('/')}/{SOURCES}")

    def _final(self, t: int) -> str:
        return f"{self.path}/t{t:08d}.json"

    def consumed(self, frontier: int | None) -> set[str]:
        """Every file the runs before ``frontier`` consumed."""
        out: set[str] = set()
        if frontier is None:
            return out
        names = {
            i.base_name
            for i in self.fs.get_file_info(pafs.FileSelector(self.path, allow_not_found=True))
        }
        for t in range(frontier):
            final = f"t{t:08d}.json"
            if final not in names:
                attempts = sorted(n for n in names if n.startswith(f"t{t:08d}-"))
                if len(attempts) == 0:
                    # A time no run of this view gave updates at (the state was written by
                    # run_on_spark directly): nothing to exclude.
                    continue
                if len(attempts) > 1:
                    raise StateError(
                        f"incremental view state {self.root}: the run at time {t} committed "
                        f"but did not record its files, and {len(attempts)} attempts name "
                        f"files for that time ({', '.join(attempts)}); cannot tell which "
                        f"files it read: refresh fully into a new state path"
                    )
                final = attempts[0]
            for files in _read_json(self.fs, f"{self.path}/{final}")["files"].values():
                out.update(files)
        return out

    def attempt(self, t: int, files: Mapping[str, list[str]]) -> str:
        self.fs.create_dir(self.path, recursive=True)
        path = f"{self.path}/t{t:08d}-{uuid.uuid4().hex[:12]}.attempt.json"
        _write_json(self.fs, path, {"time": t, "files": dict(files)})
        return path

    def commit(self, t: int, attempt: str) -> None:
        self.fs.move(attempt, self._final(t))


def _new_files(source: Source, consumed: set[str]) -> list[str]:
    fs, path = _fs(source.path)
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
    ext = {"parquet": (".parquet",), "json": (".json", ".jsonl")}[source.format]
    files = [
        i.path
        for i in infos
        if i.type == pafs.FileType.File
        and i.base_name.endswith(ext)
        and not i.base_name.startswith((".", "_"))
    ]
    return sorted(f for f in files if f not in consumed)


def _manifests(dirs: StateDir) -> list[Manifest]:
    """Every committed manifest of the state, oldest first."""
    infos = dirs.fs.get_file_info(pafs.FileSelector(dirs.path, allow_not_found=True))
    names = sorted(
        i.base_name
        for i in infos
        if i.base_name.startswith("manifest-") and i.base_name.endswith(".json")
    )
    out = []
    for name in names:
        with dirs.fs.open_input_stream(f"{dirs.path}/{name}") as f:
            out.append(Manifest.from_json(f.read().decode(), dirs.root))
    return out


def refresh(
    spark: SparkSession,
    build: Build,
    sources: Mapping[str, Source],
    state: str,
    *,
    progress: bool | Callable[[str], None] = False,
) -> Refresh:
    """Runs ``build``'s dataflow on the files added to ``sources`` since the last refresh,
    continuing from ``state``; returns what it read. See the module doc."""
    for name, src in sources.items():
        if src.format not in FORMATS:
            raise PlanError(
                f"ddflow.spark.pipelines.refresh: source {name!r} has format {src.format!r}; "
                f"use one of {', '.join(FORMATS)}"
            )
    root = state.rstrip("/")
    dirs = StateDir(spark, f"{root}/{STATE}")
    prior = dirs.current()
    frontier = None if prior is None else prior.frontier
    ledger = _Ledger(root)
    consumed = ledger.consumed(frontier)
    files = {name: _new_files(src, consumed) for name, src in sources.items()}
    if not any(files.values()):
        return Refresh(None, files, {name: 0 for name in sources})
    t = 0 if frontier is None else frontier
    flow = Dataflow()
    inputs, output = build(flow)
    if set(inputs) != set(sources):
        raise PlanError(
            f"ddflow.spark.pipelines.refresh: the dataflow's inputs are {sorted(inputs)}, "
            f"the sources {sorted(sources)}; give one source per input"
        )
    frames: dict[InputSession, DataFrame] = {}
    rows: dict[str, int] = {}
    for name, src in sources.items():
        df = _read(spark, src, [_uri(src.path, f) for f in files[name]])
        if "diff" not in df.columns:
            df = df.withColumn("diff", F.lit(1).cast("long"))
        frames[inputs[name]] = df.withColumn("time", F.lit(t).cast("long"))
        rows[name] = 0 if not files[name] else df.count()
    attempt = ledger.attempt(t, files)
    run_on_spark(spark, flow, frames, [output], state=dirs.root, progress=progress)
    ledger.commit(t, attempt)
    return Refresh(t, files, rows)


def _read(spark: SparkSession, src: Source, uris: list[str]) -> DataFrame:
    if not uris:
        return spark.createDataFrame([], src.schema)
    reader = spark.read.schema(src.schema)
    return reader.json(uris) if src.format == "json" else reader.parquet(*uris)


def accumulated(spark: SparkSession, build: Build, state: str) -> DataFrame:
    """The view's contents: the sum of every committed run's output updates, record columns
    and ``diff`` (zeros dropped). Builds the plan without analysing it (the columns come from
    ``build``, the files from the manifests), as a pipeline query function must."""
    dirs = StateDir(spark, f"{state.rstrip('/')}/{STATE}")
    manifests = _manifests(dirs)
    if not manifests:
        raise StateError(f"incremental view state {state}: no run has committed yet")
    outs = {n for m in manifests for n in m.outputs}
    if len(outs) != 1:
        raise StateError(f"incremental view state {state}: expected one output, found {outs}")
    paths = [dirs.uri(p) for m in manifests for p in m.outputs.values()]
    _, output = build(Dataflow())
    cols = list(output.columns)
    # The stored output updates keep the backend's column names (record column i as
    # ``ccol(i)``, the diff as ``DIFF``); the view names them as the collection does.
    updates = spark.read.parquet(*paths)
    named = updates.select(
        *[F.col(ccol(i)).alias(c) for i, c in enumerate(cols)], F.col(DIFF).alias("diff")
    )
    summed = named.groupBy(*cols).agg(F.sum("diff").cast("long").alias("diff"))
    return summed.where(F.col("diff") != 0)
