"""``python -m ddflow.doctor`` (without ``--spark``): it runs in a fresh interpreter, prints
the versions of ddflow, Python, numpy and pyarrow and exits 0 on this installation; its
helpers read Java versions and build types, and a problem makes the exit status 1.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import ddflow
from ddflow import _core, doctor

pytestmark = pytest.mark.timeout(60)


def test_doctor_prints_versions_and_exits_zero() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ddflow.doctor"], capture_output=True, text=True, timeout=50
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Rows are "name" padded to 18 characters, then the value; indented rows belong to ddflow.
    rows = {line[:18].strip(): line[18:].strip() for line in done.stdout.splitlines()}
    assert rows["ddflow"].startswith(f"{ddflow.__version__} (")
    assert rows["python"].startswith(f"{platform.python_version()} (")
    assert rows["numpy"] == np.__version__
    assert rows["pyarrow"] == pa.__version__
    assert "pyspark" in rows and "java" in rows
    assert "problem:" not in done.stdout
    assert done.stdout.rstrip().endswith("no problems found")


def test_a_problem_exits_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A native module of another version than the installed package is a problem."""
    real = doctor.dist_version
    monkeypatch.setattr(
        doctor, "dist_version", lambda name: "9.9.9" if name == "ddflow" else real(name)
    )
    assert doctor.main([]) == 1
    out = capsys.readouterr().out
    assert f"ddflow._core is version {_core.__version__} but the installed package is 9.9.9" in out
    assert out.rstrip().endswith("1 problem(s) found")


def test_spark_without_pyspark_is_a_problem(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = doctor.dist_version
    monkeypatch.setattr(
        doctor, "dist_version", lambda name: None if name == "pyspark" else real(name)
    )
    assert doctor.main(["--spark"]) == 1
    assert "--spark needs pyspark" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_402"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ("no version here", None),
    ],
)
def test_java_major(line: str, major: int | None) -> None:
    assert doctor.java_major(line) == major


def test_core_build_reads_overflow_checks(tmp_path: Path) -> None:
    debug, release = tmp_path / "debug.so", tmp_path / "release.so"
    debug.write_bytes(b"\0" * 100 + doctor.OVERFLOW_CHECK_MESSAGE + b"\0")
    release.write_bytes(b"\0" * 100)
    assert doctor.core_build(debug) == "debug"
    assert doctor.core_build(release) == "release"
    assert doctor.core_build(tmp_path / "missing.so") is None
    assert doctor.core_build(_core.__file__ or "") in ("debug", "release")
