"""What the benchmark reports say about the machine and the code they ran on: the load
average, the CPU model and the commit."""

from __future__ import annotations

import os
import platform
import subprocess

__all__ = ["commit", "cpu", "load"]


def load() -> str:
    """The load averages over 1, 5 and 15 minutes, as ``a/b/c``."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def cpu() -> str:
    """The CPU model (from ``/proc/cpuinfo``)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def commit() -> str:
    """The short hash of the checkout's HEAD (``unknown`` outside git)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
