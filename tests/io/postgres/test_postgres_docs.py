"""The Postgres example of ``docs/how-to/connectors.md`` runs against the test server.

Its code blocks are fenced ``python3`` so that ``tests/docs`` (which runs ``python`` blocks
without any server) leaves them out; here they run in order in one namespace, with
``conninfo`` bound to the session's server, and the output they print is checked.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

PAGE = Path(__file__).resolve().parents[3] / "docs" / "how-to" / "connectors.md"


def _blocks(text: str) -> list[tuple[int, str]]:
    """The ``python3`` blocks of a page: first line (1-based) and source."""
    return [
        (text[: m.start()].count("\n") + 2, m.group(1))
        for m in re.finditer(r"^```python3\n(.*?)^```$", text, re.S | re.M)
    ]


@pytest.mark.timeout(60)
def test_the_postgres_example_runs(
    conninfo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _blocks(PAGE.read_text(encoding="utf-8"))
    assert blocks, "the page has no python3 block"
    namespace: dict[str, Any] = {"__name__": "__docs__", "conninfo": conninfo}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for line, source in blocks:
            exec(compile("\n" * (line - 1) + source, str(PAGE), "exec"), namespace)
    assert out.getvalue().strip() == "[('eu', 1, 1), ('us', 5, 1)]"
