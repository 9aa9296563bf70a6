"""The version has one source, the Cargo workspace's ``[workspace.package] version``.

``pyproject.toml`` declares the version dynamic (maturin reads it from Cargo), the native
module reports ``CARGO_PKG_VERSION`` and ``ddflow.__version__`` is that, so the installed
package's metadata, ``ddflow.__version__`` and ``ddflow._core.__version__`` agree, and they
are the version in the checkout's ``Cargo.toml`` (a stale build fails here).
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

import ddflow
from ddflow import _core

pytestmark = pytest.mark.timeout(30)

ROOT = Path(__file__).resolve().parents[2]


def test_package_metadata_and_native_module_agree() -> None:
    assert ddflow.__version__ == importlib.metadata.version("ddflow") == _core.__version__


def test_the_cargo_workspace_is_the_one_source() -> None:
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project, "pyproject.toml: the version comes from Cargo.toml"
    assert "version" in project["dynamic"]
    assert cargo["workspace"]["package"]["version"] == ddflow.__version__
    for crate in ("ddflow-core", "ddflow-py"):
        manifest = tomllib.loads((ROOT / "rust" / crate / "Cargo.toml").read_text())
        assert manifest["package"]["version"] == {"workspace": True}, crate
