"""The flags of the JVMs the Spark tests start, and the class-data-sharing archive that
halves their start-up.

Every JVM a test starts through ``spark-submit`` (the test session, the sessions of jobs
run in subprocesses, the Spark Connect servers, the ``spark-pipelines`` CLI) gets
:func:`java_options` through ``SPARK_SUBMIT_OPTS``:

- ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC``: the client compiler only (C2's warm-up
  costs more CPU than a test's short jobs ever win back) and the serial collector (no
  parallel GC threads on a 2-core machine). They cut a Spark test's CPU time by about a
  third (``test_joins``: 35 s of CPU to 23 s);
- when one was built for this pyspark, ``-XX:SharedArchiveFile=`` a dynamic CDS archive of
  the classes a Spark test loads (JDK 13+): the JVM maps them instead of loading and
  verifying them from the jars. A local session's start, one small job and its stop went
  from 8.8 s of CPU to 4.6 s (``perf stat -e task-clock``, pyspark 4.3.0, Java 17).

``python -m tests.spark.jvm_options --build`` builds the archive of the running
interpreter's pyspark (``.ci/run`` builds one per pyspark beside its release build): a JVM
started with ``-XX:ArchiveClassesAtExit`` runs the kinds of Spark jobs ddflow's backend runs,
in plain pyspark (so no ddflow is needed yet), and writes the classes it loaded when it
exits. Tests take the same CPU time on it as on an archive made by ``run_on_spark`` jobs
(``tests/spark/test_chained_joins.py`` and ``test_nulls.py`` on pyspark 3.5.3, twice each:
79.1 and 89.5 s of CPU against 82.2 and 86.5 s, ``perf stat -e task-clock``). The archive
is named by the pyspark version and a hash of its install path, its jars and the ``java``
it runs on, since an archive only serves the class path and JDK it was made from; one that
exists is not built again. A JVM that cannot use an archive (another class path or JDK)
starts without it, silently (``-Xlog:cds=off``); the tests' answers never depend on it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BASE_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The flags every test JVM gets."""

_QUIET = "-Xlog:cds=off,cds+dynamic=off"
"""An archive the JVM cannot use is skipped without a warning on stderr."""


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _class_path_stamp(home: Path) -> str:
    """What an archive is valid for: pyspark's install path, each of its jars (name, size,
    modification time) and the ``java`` it runs on."""
    parts = [str(home)]
    jars = home / "jars"
    if jars.is_dir():
        for jar in sorted(jars.iterdir()):
            st = jar.stat()
            parts.append(f"{jar.name} {st.st_size} {st.st_mtime_ns}")
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if java and os.path.exists(java):
        real = os.path.realpath(java)
        parts.append(f"{real} {os.stat(real).st_mtime_ns}")
    return "\n".join(parts)


def archive_path() -> Path:
    """Where the archive of this interpreter's pyspark is (or would be) kept: named by the
    pyspark version and a hash of :func:`_class_path_stamp`."""
    import pyspark

    tag = hashlib.sha256(_class_path_stamp(_spark_home()).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "ddflow-tests" / f"spark-{pyspark.__version__}-{tag}.jsa"


def java_options() -> str:
    """The test JVMs' flags: :data:`BASE_OPTIONS`, and the archive when it was built."""
    archive = archive_path()
    if archive.is_file():
        return f"{BASE_OPTIONS} -XX:SharedArchiveFile={archive} {_QUIET}"
    return BASE_OPTIONS


def build() -> Path:
    """Builds the archive of this interpreter's pyspark, unless it was built for the same
    class path and ``java`` before (:func:`archive_path`); its path."""
    target = archive_path()
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    env = dict(os.environ)
    env["SPARK_SUBMIT_OPTS"] = f"{BASE_OPTIONS} -XX:ArchiveClassesAtExit={partial}"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "tests.spark.jvm_options", "--job"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise RuntimeError(
            f"building the JVM archive failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    partial.replace(target)
    return target


def _job() -> None:
    """The archive's workload: the Spark operations ddflow's Spark backend runs (``mapInArrow``
    over repartitioned Arrow batches, joins, unions, grouped aggregates, checkpoints, cached
    and Parquet-stored state), on a session configured as the tests' own. Plain pyspark and
    pyarrow: the JVM never sees ddflow (its Python workers import it), so the archive can be
    built before ddflow is installed, and it holds the same classes."""
    import warnings
    from collections.abc import Iterator

    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F
    from tests.spark.session import local_session

    def step(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            dist = pc.add(batch.column("dist"), 1)
            yield pa.RecordBatch.from_arrays(
                [batch.column("node"), dist, batch.column("diff")], names=["node", "dist", "diff"]
            )

    session = local_session()
    try:
        with tempfile.TemporaryDirectory() as state:
            session.sparkContext.setCheckpointDir(f"{state}/checkpoints")
            edges = session.createDataFrame(
                pa.table(
                    {
                        "src": [i % 40 for i in range(60)],
                        "dst": [(i * 7 + 3) % 40 for i in range(60)],
                    }
                ).to_pandas()
            ).repartition(2, "src")
            dists = session.createDataFrame([(0, 0, 1)], "node long, dist long, diff long")
            for _ in range(3):
                reached = (
                    edges.join(dists, edges.src == dists.node)
                    .select(F.col("dst").alias("node"), "dist", "diff")
                    .repartition(2, "node")
                    .mapInArrow(step, "node long, dist long, diff long")
                )
                dists = (
                    dists.unionByName(reached)
                    .groupBy("node")
                    .agg(F.min("dist").alias("dist"), F.sum("diff").alias("diff"))
                    .localCheckpoint()
                )
            dists.persist()
            dists.count()
            dists.write.mode("overwrite").parquet(f"{state}/dists")
            stored = session.read.parquet(f"{state}/dists").checkpoint()
            stored.coalesce(1).join(edges, stored.node == edges.src, "left").collect()
            dists.unpersist()
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="build this pyspark's archive")
    parser.add_argument("--print", action="store_true", help="print the JVM flags")
    parser.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        _job()
    if args.build:
        print(f"JVM archive for the Spark tests: {build()}")
    if args.print:
        print(java_options())


if __name__ == "__main__":
    main()
