"""ddflow: differential dataflow for Python, run by a Rust engine."""

from __future__ import annotations

from ddflow import _core
from ddflow.errors import DdflowError

__version__ = _core.__version__
__all__ = ["DdflowError", "__version__"]
