"""``ddflow.spark.tasks`` (what ``mapInArrow`` runs on executors) imports no pyspark: every
module imports in a fresh interpreter where any pyspark import fails, and no source file
names pyspark in an import statement (not even under ``TYPE_CHECKING``)."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import ddflow.spark.tasks as tasks

pytestmark = pytest.mark.timeout(60)

TASKS_DIR = Path(tasks.__file__).parent


def _modules() -> list[str]:
    names = [f"ddflow.spark.tasks.{m.name}" for m in pkgutil.iter_modules([str(TASKS_DIR)])]
    assert names, "no task modules found"
    return ["ddflow.spark.tasks", *names]


_BLOCKED_IMPORT = """
import importlib, sys

class NoPyspark:
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError(f"blocked: task modules must not import {name}")
        return None

sys.meta_path.insert(0, NoPyspark())
for name in sys.argv[1:]:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m == "pyspark" or m.startswith("pyspark."))
assert not loaded, loaded
print("imported", len(sys.argv) - 1)
"""


def test_task_modules_import_without_pyspark() -> None:
    modules = _modules()
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED_IMPORT, *modules],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"imported {len(modules)}"


def _imported_names(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.append(node.module)
        elif isinstance(node, ast.Call):
            func = node.func
            called = getattr(func, "attr", getattr(func, "id", ""))
            if called in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    names.append(first.value)
    return names


def test_task_sources_name_no_pyspark_import() -> None:
    sources = sorted(TASKS_DIR.glob("*.py"))
    assert sources
    for path in sources:
        tree = ast.parse(path.read_text(), filename=str(path))
        bad = [n for n in _imported_names(tree) if n.split(".")[0] == "pyspark"]
        assert not bad, f"{path.name} imports {bad}"
