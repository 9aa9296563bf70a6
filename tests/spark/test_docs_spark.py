"""The documentation's code blocks that need Spark (``<!-- skip: needs Spark -->``) run on the
test session's local Spark.

Each page with such a block runs whole here: all its Python blocks in order in one namespace,
with ``spark`` bound to the fixture's session (``local[2]``, executors on this interpreter).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tests.docs.code_blocks import ROOT, blocks, page_id, pages

SPARK_PAGES = [p for p in pages() if any(b.needs_spark for b in blocks(p))]


def test_some_docs_need_spark() -> None:
    """At least one page shows Spark code (a guard against a broken marker)."""
    assert SPARK_PAGES


@pytest.mark.timeout(300)
@pytest.mark.parametrize("page", SPARK_PAGES, ids=page_id)
def test_spark_code_blocks_run(
    page: Path, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Python block of the page runs in order, Spark blocks on the local session."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    namespace: dict[str, Any] = {"__name__": "__docs__", "spark": spark}
    for block in blocks(page):
        block.run(namespace)
