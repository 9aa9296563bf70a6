"""``python/ddflow/_core.pyi`` matches the native module (mypy's stubtest).

Skipped when mypy is not installed (``pip install mypy==1.13.0``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_core_stub_matches_runtime(tmp_path: Path) -> None:
    pytest.importorskip("mypy.stubtest")
    config = tmp_path / "mypy.ini"
    # Only the stub is checked; the rest of the package is type-checked elsewhere (mypy in
    # .ci/run), so its modules are not followed: a fifth of the CPU (6 s against 27 s).
    config.write_text(
        "[mypy]\n"
        f"cache_dir = {tmp_path / 'cache'}\n"
        "ignore_missing_imports = True\n"
        "[mypy-ddflow.*]\n"
        "ignore_errors = True\n"
        "follow_imports = skip\n"
        "[mypy-ddflow._core]\n"
        "ignore_errors = False\n"
        "follow_imports = normal\n"
    )
    env = {**os.environ, "MYPYPATH": str(REPO / "python")}
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "ddflow._core", "--mypy-config-file", str(config)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
