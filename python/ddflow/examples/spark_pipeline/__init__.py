"""An incremental materialized view in a Spark Declarative Pipelines project.

The pipeline (``spark-pipeline.yml`` and ``transformations/distances.py``, written into a
project directory by ``init``) has one materialized view, ``distances``: the BFS hop
distance ``(node, dist)`` of every node reachable from node 0, over the edges in the
project's ``source/`` directory (Parquet files ``src, dst, diff``; a file may retract an
edge with ``diff`` -1). Importing the definitions file runs ``ddflow.spark.pipelines.refresh``:
it feeds only the files added since the previous ``spark-pipelines run`` to the BFS
dataflow, which continues from the state under ``state/``; the query function returns
``accumulated``, the sum of every run's stored output updates.

``python -m ddflow.examples.spark_pipeline init DIR | add DIR | check DIR`` (see
``__main__.py``) makes the project, adds a source file, and compares the view with a full
recompute on the embedded engine.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

import ddflow as dd
from ddflow.spark.pipelines import Refresh, Source, accumulated, refresh

__all__ = [
    "NAME",
    "SCHEMA",
    "build",
    "sources",
    "state",
    "update",
    "view",
    "init",
    "add",
    "source_rows",
    "recompute",
    "read_view",
    "refreshes",
]

NAME = "distances"
"""The view's name (its table in the pipeline's catalog)."""

SCHEMA = "src long, dst long, diff long"
"""The source files' columns: an edge and its multiplicity."""

SPEC = """name: ddflow_distances
storage: file://{storage}
# SQL settings the pipeline's flows run with (runtime SQL settings only: the flows set them).
configuration:
  spark.sql.shuffle.partitions: "4"
  spark.sql.adaptive.enabled: "false"
libraries:
  - glob:
      include: transformations/**
"""

SPARK_DEFAULTS = """# Read by spark-pipelines (and the local Spark Connect server it starts)
# when run with SPARK_CONF_DIR set to this directory. Hive's catalog, kept in metastore_db/ in the
# directory spark-pipelines runs in, outlives the run, so the next run finds the view's
# table: with the default in-memory catalog the next run finds the table's files but not the
# table and fails with LOCATION_ALREADY_EXISTS. A static setting: it cannot go in the spec's
# configuration, which the flows set as SQL settings.
spark.sql.catalogImplementation hive
spark.ui.enabled false
spark.ui.showConsoleProgress false
"""


def build(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], dd.Collection]:
    """The view's dataflow: BFS distances from node 0 over the ``edges`` input."""
    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64"}, name="edges")
    roots = flow.constant([(0,)], {"node": "int64"})
    return {"edges": edges_in}, dd.algorithms.bfs(edges, roots)


def sources(project: str | Path) -> dict[str, Source]:
    """The view's one source: ``project/source``."""
    return {"edges": Source(str(Path(project) / "source"), SCHEMA, "parquet")}


def state(project: str | Path) -> str:
    """The view's state: ``project/state``."""
    return str(Path(project) / "state")


def update(spark: SparkSession, project: str | Path) -> Refresh:
    """Runs the dataflow on the source files added since the last refresh (module level of
    the definitions file); appends what it read to ``project/refreshes.jsonl``."""
    done = refresh(spark, build, sources(project), state(project))
    with (Path(project) / "refreshes.jsonl").open("a") as f:
        f.write(json.dumps({"time": done.time, "files": done.files, "rows": done.rows}))
        f.write("\n")
    return done


def view(spark: SparkSession, project: str | Path) -> DataFrame:
    """The query function's DataFrame: the accumulated BFS distances."""
    return accumulated(spark, build, state(project))


def _write(
    project: Path,
    src: npt.NDArray[np.int64],
    dst: npt.NDArray[np.int64],
    diff: npt.NDArray[np.int64],
) -> Path:
    folder = project / "source"
    folder.mkdir(parents=True, exist_ok=True)
    index = len(list(folder.glob("*.parquet")))
    path = folder / f"edges-{index:05d}.parquet"
    table = pa.table({"src": src, "dst": dst, "diff": diff})
    tmp = folder / f".{path.name}.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def init(project: str | Path, nodes: int = 2_000, edges: int = 4_000, seed: int = 1) -> Path:
    """Writes the pipeline project into ``project`` (a new directory: the spec, the
    definitions, ``conf/spark-defaults.conf`` for ``SPARK_CONF_DIR``) and its first source
    file: ``edges`` random edges over ``nodes`` nodes, four of them out of node 0. Returns
    the spec's path."""
    root = Path(project).resolve()
    root.mkdir(parents=True)
    (root / "pipeline-storage").mkdir()
    spec = root / "spark-pipeline.yml"
    spec.write_text(SPEC.format(storage=root / "pipeline-storage"))
    (root / "conf").mkdir()
    (root / "conf" / "spark-defaults.conf").write_text(SPARK_DEFAULTS)
    here = Path(__file__).parent / "transformations"
    shutil.copytree(here, root / "transformations", ignore=shutil.ignore_patterns("__*"))
    rng = np.random.default_rng(seed)
    src = rng.integers(0, nodes, edges, dtype=np.int64)
    src[:4] = 0  # node 0 (the root) starts with a few edges out
    dst = rng.integers(0, nodes, edges, dtype=np.int64)
    (root / "nodes").write_text(str(nodes))
    _write(root, src, dst, np.ones(edges, dtype=np.int64))
    return spec


def source_rows(project: str | Path) -> pa.Table:
    """Every source row so far, consolidated: ``src, dst, diff`` with ``diff`` != 0."""
    files = sorted((Path(project) / "source").glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(f) for f in files])
    summed = table.group_by(["src", "dst"]).aggregate([("diff", "sum")])
    summed = summed.rename_columns(["src", "dst", "diff"])
    return summed.filter(pc.not_equal(summed["diff"], 0))


def add(project: str | Path, inserts: int = 100, deletes: int = 20, seed: int = 2) -> Path:
    """Adds one source file: ``inserts`` new random edges and ``deletes`` retractions of
    edges present now."""
    root = Path(project)
    nodes = int((root / "nodes").read_text())
    rng = np.random.default_rng(seed)
    present = source_rows(root)
    pick = rng.choice(present.num_rows, size=min(deletes, present.num_rows), replace=False)
    gone = present.take(pa.array(pick, type=pa.int64()))
    src = np.concatenate([rng.integers(0, nodes, inserts), gone["src"].to_numpy()])
    dst = np.concatenate([rng.integers(0, nodes, inserts), gone["dst"].to_numpy()])
    diff = np.concatenate([np.ones(inserts), -np.ones(gone.num_rows)]).astype(np.int64)
    return _write(root, src.astype(np.int64), dst.astype(np.int64), diff)


def recompute(project: str | Path) -> pa.Table:
    """The view recomputed from every source row on the embedded engine: ``node, dist,
    diff``, sorted."""
    edges = source_rows(project)
    flow = dd.Dataflow()
    inputs, out = build(flow)
    cap = out.capture()
    if edges.num_rows:
        inputs["edges"].update_batch(
            {"src": edges["src"].to_numpy(), "dst": edges["dst"].to_numpy()},
            times=np.zeros(edges.num_rows, dtype=np.int64),
            diffs=edges["diff"].to_numpy(),
        )
    inputs["edges"].close()
    flow.run()
    return cap.state()


def read_view(project: str | Path) -> pa.Table:
    """The ``distances`` table the last ``spark-pipelines run`` wrote, sorted: ``node,
    dist, diff``."""
    table = pq.read_table(Path(project) / "spark-warehouse" / NAME)
    return table.select(["node", "dist", "diff"]).sort_by(
        [("node", "ascending"), ("dist", "ascending")]
    )


def refreshes(project: str | Path) -> list[Mapping[str, object]]:
    """What each refresh read, oldest first (``refreshes.jsonl``)."""
    log = Path(project) / "refreshes.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line]
