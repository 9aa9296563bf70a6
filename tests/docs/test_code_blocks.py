"""Every Python code block of the documentation site runs without raising (``docs/``).

One test per page: its blocks run in order in one fresh namespace (see
:mod:`tests.docs.code_blocks`). Blocks marked ``<!-- skip: needs Spark -->`` are left out here
and run by ``tests/spark/test_docs_spark.py``. Output shown in ``# -> ...`` comments is not
asserted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.docs.code_blocks import DOCS, ROOT, blocks, page_id, pages

PAGES = pages()


def test_the_docs_have_pages_with_code() -> None:
    """The site is there and most of its code runs here (a guard against a broken extractor)."""
    assert (DOCS.parent / "mkdocs.yml").is_file()
    runnable = [b for p in PAGES for b in blocks(p) if not b.needs_spark]
    assert len(PAGES) >= 10
    assert len(runnable) >= 20


@pytest.mark.timeout(90)
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_code_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's Python blocks (except those that need Spark) run in order in one namespace."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in blocks(page):
        if not block.needs_spark:
            block.run(namespace)
