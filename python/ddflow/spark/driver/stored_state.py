"""The stored state of incremental Spark runs (``run_on_spark(..., state=path)``): which plan
it belongs to, the frontier its runs reached, and the update histories of the plan nodes a
later run reads (join and reduce inputs, reduce outputs; inside an iterate with the
iteration of every update).

Layout under the state path (a local directory or a Hadoop-compatible URI that every
executor and the driver can reach):

* ``manifest-00000003.json``: one per committed run, the newest is current. It names the
  plan's fingerprint (and one line per plan node, so a different plan is reported by the
  first node that differs), the frontier, the supersteps each iterate ran, and for every
  stored node its Spark schema and its layers.
* ``r00000003-<run id>/n<node>/``: one layer, a Parquet directory holding that node's
  updates from one run; inside an iterate partitioned by iteration (``_i=0/``, ``_i=1/``,
  ...), so a superstep reads only the iterations it needs. Layers are never
  rewritten; a node's history is the union of its layers, as a trace is a list of batches.
* ``r00000003-<run id>/out<node>/``: the run's output updates, which its result reads.

A run writes its layers first, then commits by creating the next manifest without
overwriting one: a local file is linked into place (``os.link`` fails when the name exists),
other file systems use a create-if-absent rename (atomic on HDFS; on object stores two runs
committing at the same instant are not excluded). The run that loses gets
``StateConflictError``, its files are deleted, and the state stays as the winner left it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ddflow.errors import PlanError
from ddflow.persist.journal import MANIFEST_FILE, SPARK_STATE_MANIFEST_FILE
from ddflow.plan import Plan

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ITER",
    "StateError",
    "StateConflictError",
    "Manifest",
    "StateDir",
    "plan_lines",
]

FORMAT = "ddflow-spark-state"
FORMAT_VERSION = 1
ITER = "_i"
"""The iteration column of a stored node inside an iterate."""


class StateError(PlanError):
    """The stored state cannot continue this run: another plan, another format, or updates
    before its frontier."""


class StateConflictError(StateError):
    """Another run committed to the same state path while this one was computing."""


def plan_lines(
    plan: Plan,
    needed: set[int],
    outputs: Sequence[int],
    functions: Sequence[Any],
    input_types: Mapping[int, Sequence[str]],
) -> list[str]:
    """One line per plan node the outputs need (labels left out: they name source lines),
    user functions by qualified name and bytecode, input nodes with their column types, and
    the output nodes: equal lines mean the same computation."""
    lines = []
    for n in sorted(needed):
        node = {k: v for k, v in plan.nodes[n].items() if k != "label"}
        node = _named_functions(node, functions)
        if n in input_types:
            node["types"] = list(input_types[n])
        scope = plan.scopes[int(node["scope"])]
        if scope.max_iterations is not None:
            node["max_iterations"] = scope.max_iterations
        lines.append(f"#{n} " + json.dumps(node, sort_keys=True, separators=(",", ":")))
    lines.append("outputs " + json.dumps(sorted(outputs)))
    return lines


def _named_functions(value: Any, functions: Sequence[Any]) -> Any:
    """``value`` with every user function id (a ``fn`` field) replaced by its identity."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "fn" and isinstance(v, int) and 0 <= v < len(functions):
                out[k] = _function_identity(functions[v])
            else:
                out[k] = _named_functions(v, functions)
        return out
    if isinstance(value, list):
        return [_named_functions(v, functions) for v in value]
    return value


def _function_identity(fn: Any) -> str:
    target = getattr(fn, "fn", fn)
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"
    code = getattr(target, "__code__", None)
    if code is None:
        return name
    digest = hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest()[:16]
    return f"{name}@{digest}"


@dataclass
class Manifest:
    """One committed run's view of the state."""

    version: int
    plan: list[str]
    frontier: int | None
    """The time every later update must reach (None: no update seen yet)."""
    supersteps: dict[int, int] = field(default_factory=dict)
    """Per iterate scope: the supersteps its runs went through (the most of any run)."""
    schemas: dict[int, str] = field(default_factory=dict)
    """Per stored node: its Spark schema (JSON)."""
    layers: dict[int, list[str]] = field(default_factory=dict)
    """Per stored node: its layers, relative to the state path."""
    outputs: dict[int, str] = field(default_factory=dict)
    """Per output node: this run's output updates, relative to the state path."""
    output_schemas: dict[int, str] = field(default_factory=dict)
    """Per output node: the Spark schema (JSON) of its updates (the backend's columns)."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "version": self.version,
                "plan": self.plan,
                "frontier": self.frontier,
                "supersteps": {str(k): v for k, v in self.supersteps.items()},
                "schemas": {str(k): v for k, v in self.schemas.items()},
                "layers": {str(k): v for k, v in self.layers.items()},
                "outputs": {str(k): v for k, v in self.outputs.items()},
                "output_schemas": {str(k): v for k, v in self.output_schemas.items()},
            },
            indent=1,
        )

    @staticmethod
    def from_json(text: str, where: str) -> Manifest:
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise StateError(f"state {where}: the manifest is not JSON ({exc})") from None
        if raw.get("format") != FORMAT:
            raise StateError(
                f"state {where}: not a ddflow Spark state (format {raw.get('format')!r})"
            )
        if raw.get("format_version") != FORMAT_VERSION:
            raise StateError(
                f"state {where}: format version {raw.get('format_version')!r}, this ddflow "
                f"reads version {FORMAT_VERSION}; run the whole history again into a new path"
            )
        return Manifest(
            version=int(raw["version"]),
            plan=list(raw["plan"]),
            frontier=raw["frontier"],
            supersteps={int(k): int(v) for k, v in raw["supersteps"].items()},
            schemas={int(k): str(v) for k, v in raw["schemas"].items()},
            layers={int(k): list(v) for k, v in raw["layers"].items()},
            outputs={int(k): str(v) for k, v in raw.get("outputs", {}).items()},
            output_schemas={int(k): str(v) for k, v in raw.get("output_schemas", {}).items()},
        )

    def check_plan(self, lines: list[str], where: str) -> None:
        """Raises ``StateError`` naming the first plan line that differs."""
        if lines == self.plan:
            return
        for old, new in zip(self.plan, lines, strict=False):
            if old != new:
                raise StateError(
                    f"state {where} was written by another plan: stored {old[:300]!r}, this "
                    f"plan {new[:300]!r}; use a new state path (or delete it to start over)"
                )
        raise StateError(
            f"state {where} was written by another plan: it has {len(self.plan) - 1} nodes, "
            f"this plan {len(lines) - 1}; use a new state path (or delete it to start over)"
        )


class StateDir:
    """A state path: reads the current manifest, writes layers, commits the next manifest."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark = spark
        self.root = root.rstrip("/")
        if "://" in self.root and not self.root.startswith("file://"):
            self.fs, self.path = pafs.FileSystem.from_uri(self.root)
            self.local = False
        else:
            local = self.root[len("file://") :] if self.root.startswith("file://") else self.root
            self.fs, self.path = pafs.LocalFileSystem(), os.path.abspath(local)
            self.local = True
            self.root = self.path
        self.run_id = uuid.uuid4().hex[:12]

    def current(self) -> Manifest | None:
        """The newest committed manifest, or None for an empty or missing path."""
        infos = self.fs.get_file_info(pafs.FileSelector(self.path, allow_not_found=True))
        versions = []
        for info in infos:
            if m := SPARK_STATE_MANIFEST_FILE.fullmatch(info.base_name):
                versions.append(int(m.group(1)))
        if not versions:
            if any(MANIFEST_FILE.fullmatch(info.base_name) for info in infos):
                raise StateError(
                    f"state {self.root} is the persistence directory of an embedded dataflow "
                    "(dd.Persistence), not a Spark state: the two keep different things (see "
                    "the persistence docs). Use another path for state="
                )
            return None
        name = self._manifest_name(max(versions))
        with self.fs.open_input_stream(f"{self.path}/{name}") as f:
            return Manifest.from_json(f.read().decode(), self.root)

    @staticmethod
    def _manifest_name(version: int) -> str:
        return f"manifest-{version:08d}.json"

    def run_dir(self, version: int) -> str:
        """This run's directory for ``version``, relative to the path."""
        return f"r{version:08d}-{self.run_id}"

    def uri(self, relative: str) -> str:
        """``relative`` as a path Spark reads and writes."""
        return f"{self.root}/{relative}"

    def history(self, manifest: Manifest, node: int) -> DataFrame | None:
        """Node ``node``'s stored updates (the union of its layers), or None."""
        layers = manifest.layers.get(node)
        if not layers:
            return None
        schema = T.StructType.fromJson(json.loads(manifest.schemas[node]))
        # One read per layer (Spark infers partitions from one root directory at a time).
        frames = [self.spark.read.schema(schema).parquet(self.uri(p)) for p in layers]
        return functools.reduce(lambda a, b: a.unionByName(b), frames)

    def write(self, df: DataFrame, relative: str) -> DataFrame:
        """Writes ``df`` as Parquet at ``relative`` (one Spark job; a path that exists fails:
        mode ``"error"``, which Spark Connect also knows) and returns it read back. A layer
        with iterations is partitioned by them (``_i=3/``), so reading one iteration, or
        those up to one, reads only their directories."""
        writer = df.write.mode("error")
        if ITER in df.columns:
            writer = writer.partitionBy(ITER)
        writer.parquet(self.uri(relative))
        return self.spark.read.schema(df.schema).parquet(self.uri(relative))

    def commit(self, manifest: Manifest) -> None:
        """Creates ``manifest``'s file unless another run created that version first
        (``StateConflictError``; this run's files are deleted)."""
        self.fs.create_dir(self.path, recursive=True)
        final = f"{self.path}/{self._manifest_name(manifest.version)}"
        tmp = f"{self.path}/.{self._manifest_name(manifest.version)}.{self.run_id}.tmp"
        with self.fs.open_output_stream(tmp) as out:
            out.write(manifest.to_json().encode())
        try:
            if self.local:
                os.link(tmp, final)
            else:
                if self.fs.get_file_info(final).type != pafs.FileType.NotFound:
                    raise FileExistsError(final)
                self.fs.move(tmp, final)
        except FileExistsError:
            self.discard(manifest.version)
            raise StateConflictError(
                f"state {self.root}: another run committed version {manifest.version} while "
                f"this one was computing; this run's output is discarded (the state is as "
                f"that run left it). Run again with the updates after its frontier."
            ) from None
        finally:
            with contextlib.suppress(FileNotFoundError, OSError):
                self.fs.delete_file(tmp)

    def discard(self, version: int) -> None:
        """Deletes this run's files for ``version`` (a failed or conflicting run)."""
        with contextlib.suppress(FileNotFoundError, OSError):
            self.fs.delete_dir(f"{self.path}/{self.run_dir(version)}")
