"""The fenced ``python`` blocks of the documentation site (``docs/**/*.md``), for the tests that
run them.

A page's blocks run in order in one namespace, so a block may use what an earlier block of the
same page defined. A block right after the HTML comment ``<!-- skip: needs Spark -->`` needs a
Spark session (the name ``spark``): ``tests/docs/test_code_blocks.py`` leaves it out, and
``tests/spark/test_docs_spark.py`` runs every page that has one, all its blocks in order, with
the Spark fixture's session bound to ``spark``. Blocks run in a temporary directory with the
repository root on ``sys.path``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: blocks run with it on ``sys.path``, as from the root (``benches``)."""

DOCS = ROOT / "docs"
"""The documentation sources (``docs_dir`` of ``mkdocs.yml``)."""

SPARK_MARK = "<!-- skip: needs Spark -->"
"""The comment that marks the next block as needing Spark."""

_FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced ``python`` block: its page, first line (1-based) and source."""

    page: Path
    line: int
    source: str
    needs_spark: bool

    def run(self, namespace: dict[str, Any]) -> None:
        """Executes the block in ``namespace``; its tracebacks name the page and line."""
        code = compile(
            "\n" * (self.line - 1) + self.source, f"{self.page.relative_to(DOCS)}", "exec"
        )
        exec(code, namespace)


def pages() -> list[Path]:
    """Every Markdown page of the site, in path order."""
    return sorted(DOCS.rglob("*.md"))


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` whose info string starts with ``python``, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    previous = ""
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        fence, indent = match["fence"], match["indent"]
        info = match["info"].strip().split()
        start = i + 1
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        if info and info[0] in ("python", "py"):
            source = "\n".join(body) + "\n"
            found.append(Block(page, start + 1, source, previous == SPARK_MARK))
        previous = ""
    return found


def page_id(page: Path) -> str:
    """A test id for ``page``: its path under ``docs/``."""
    return page.relative_to(DOCS).as_posix()
