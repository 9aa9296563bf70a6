"""``python -m ddflow.doctor``: what ddflow runs with, and whether the pieces fit together.

Prints the versions of ddflow (the native module ``ddflow._core``, which ``ddflow.__version__``
reports, beside the installed package's metadata, and the native module's build), Python,
numpy, pyarrow, pyspark and Java, and the Python interpreter Spark's executors are set to use.
With ``--spark`` it also starts a local Spark session (``local[2]``), runs a tiny
``mapInArrow`` job that reports, from the executors, the ddflow version they import and their
interpreter (``ddflow.spark``'s own version probe), and checks them as ``run_on_spark`` does
before its first job (``ddflow.spark.driver.preflight.check_executors``).

Each problem is printed with what to do about it, and the exit status is 1; it is 0 when
nothing is wrong. Notes (a debug build, Java missing without ``--spark``, executors on another
interpreter with the same ddflow) leave the exit status alone.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import mmap
import os
import platform
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ddflow import _core

# The executors' side of the check (no pyspark): the task function run_on_spark uses.
from ddflow.spark.tasks.batches import PROBE_COLUMNS, version_probe

try:  # The Spark backend's driver imports pyspark, which is optional.
    from ddflow.spark.driver import preflight
except ImportError:
    preflight = None  # type: ignore[assignment]

SPARK_MASTER = "local[2]"
"""The local Spark session ``--spark`` starts."""

OVERFLOW_CHECK_MESSAGE = b"attempt to add with overflow"
"""Compiled into a Rust library only with overflow checks, which debug builds have and
release builds (``--release``, ``--profile dist``) do not."""

JAVA_TIMEOUT_S = 30.0


@dataclass
class Report:
    """What the doctor found: rows of ``name: value``, problems and notes."""

    rows: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def row(self, name: str, value: str) -> None:
        """Adds a ``name: value`` row and prints it at once (the Spark check is slow)."""
        self.rows.append((name, value))
        print(f"{name:<18} {value}", flush=True)

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def note(self, text: str) -> None:
        self.notes.append(text)


def dist_version(name: str) -> str | None:
    """The installed distribution's version, or None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def core_build(path: str | os.PathLike[str]) -> str | None:
    """``"debug"`` or ``"release"`` for the native library at ``path`` (by whether overflow
    checks are compiled in), or None when it cannot be read."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return "debug" if m.find(OVERFLOW_CHECK_MESSAGE) >= 0 else "release"
    except (OSError, ValueError):
        return None


def java_major(version_line: str) -> int | None:
    """The major version in ``java -version``'s first line (``1.8.0_402`` is 8)."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_line)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def find_java() -> str | None:
    """The ``java`` Spark would start: ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() else None
    return shutil.which("java")


def java_version(java: str) -> str | None:
    """The first line ``java -version`` prints, or None when it does not run."""
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=JAVA_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def executor_python() -> tuple[str, str | None]:
    """How Spark's Python workers are started (``PYSPARK_PYTHON``, else pyspark's default
    ``python3``) and the executable that resolves to, or None when none does."""
    configured = os.environ.get("PYSPARK_PYTHON")
    name = configured or "python3"
    label = f"PYSPARK_PYTHON={configured}" if configured else "python3 on PATH (no PYSPARK_PYTHON)"
    return label, shutil.which(name)


def check_install(report: Report) -> None:
    """Versions of ddflow and what it runs with; problems of the installation itself."""
    version = _core.__version__
    metadata = dist_version("ddflow")
    build = core_build(_core.__file__) if _core.__file__ else None
    report.row("ddflow", f"{version} ({Path(_core.__file__ or '').parent})")
    report.row("  installed as", metadata or "(no package metadata: not installed by pip)")
    report.row("  _core build", build or "unknown")
    if metadata is None:
        report.note(
            "ddflow is imported without installed package metadata (from a source tree on "
            "sys.path?); install it with `pip install .` so other tools see it"
        )
    elif metadata != version:
        report.problem(
            f"the native module ddflow._core is version {version} but the installed package is "
            f"{metadata}: the extension was built from other sources; rebuild it "
            "(`pip install .`, or `maturin develop --release` in a checkout)"
        )
    if build == "debug":
        report.note(
            "ddflow._core is a debug build (overflow checks compiled in), many times slower "
            "than a release build: build with `pip install .` or `maturin develop --release`"
        )

    report.row("python", f"{platform.python_version()} ({sys.executable})")
    for module in ("numpy", "pyarrow"):
        report.row(module, dist_version(module) or "not installed")

    pyspark = dist_version("pyspark")
    report.row("pyspark", pyspark or "not installed (needed only by ddflow.spark)")
    java = find_java()
    line = java_version(java) if java else None
    if java is None:
        where = "JAVA_HOME/bin/java" if os.environ.get("JAVA_HOME") else "java on PATH"
        report.row("java", f"not found ({where})")
    else:
        report.row("java", f"{line or 'does not run'} ({java})")
    if pyspark is not None:
        label, resolved = executor_python()
        report.row("executor python", f"{label} -> {resolved or 'not found'}")
        if java is None or line is None:
            report.note("pyspark is installed but Java is not found: Spark needs Java 17")
        else:
            major = java_major(line)
            if major is not None and int(pyspark.split(".")[0]) >= 4 and major < 17:
                report.problem(f"pyspark {pyspark} needs Java 17 or newer; {java} is Java {major}")


def _last_error_line(exc: BaseException) -> str:
    """The most telling line of a (Py4J or Python worker) exception's text."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    named = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception)\b.*:", ln)]
    return (named or lines or [type(exc).__name__])[-1][:500]


def check_spark(report: Report) -> None:
    """Starts a local Spark session, prints what its executors import and checks it is this
    ddflow, as ``run_on_spark`` does before its first job."""
    if dist_version("pyspark") is None:
        report.problem("--spark needs pyspark: pip install 'ddflow[spark]'")
        return
    java = find_java()
    if java is None or java_version(java) is None:
        report.problem("--spark needs Java (17): install it, or set JAVA_HOME to it")
        return
    label, resolved = executor_python()
    fix = (
        f"set PYSPARK_PYTHON to an interpreter with ddflow {_core.__version__} "
        f"(this one is {sys.executable})"
    )
    if resolved is None:
        report.problem(f"Spark executors cannot start Python: {label} is not found; {fix}")
        return

    from pyspark.sql import SparkSession

    assert preflight is not None, "pyspark imports, so the Spark backend does"

    report.row("spark check", f"starting a {SPARK_MASTER} session ...")
    session = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session = (
                SparkSession.builder.master(SPARK_MASTER)
                .appName("ddflow-doctor")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.driver.memory", "512m")
                .getOrCreate()
            )
            session.sparkContext.setLogLevel("ERROR")
            schema = ", ".join(f"{c} string" for c in PROBE_COLUMNS)
            probe = session.range(0, 2, 1, 2).mapInArrow(version_probe(), schema)
            rows = sorted({tuple(r) for r in probe.collect()}, key=repr)
            for ddflow_version, core, python, executable, error in rows:
                if error is None:
                    what = f"ddflow {ddflow_version} (_core {core}), Python {python}"
                else:
                    what = f"cannot import ddflow: {error}; Python {python}"
                report.row("spark executors", f"{what} ({executable})")
            preflight.check_executors(session, 2)
    except preflight.ExecutorVersionError as exc:
        report.problem(str(exc))
    except Exception as exc:
        where = "starting Spark" if session is None else "the executors"
        failed = f"the Spark check failed in {where} ({label}): {_last_error_line(exc)}"
        if session is not None:
            failed += f". Executors need ddflow and pyarrow: {fix}"
        report.problem(failed)
    else:
        if any(Path(r[3]).resolve() != Path(sys.executable).resolve() for r in rows):
            report.note(f"the executors run another interpreter than {sys.executable}")
    finally:
        if session is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                session.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the report; returns the exit status (1 when a problem was found)."""
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.doctor",
        description="Print the versions ddflow runs with and check that they fit together.",
    )
    parser.add_argument(
        "--spark",
        action="store_true",
        help=f"also start a {SPARK_MASTER} Spark session and check that executors import "
        "this ddflow version",
    )
    args = parser.parse_args(argv)
    report = Report()
    check_install(report)
    if args.spark:
        check_spark(report)
    for text in report.notes:
        print(f"note: {text}")
    for text in report.problems:
        print(f"problem: {text}")
    if report.problems:
        print(f"{len(report.problems)} problem(s) found")
        return 1
    print("no problems found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
