"""``flow.run(progress=...)``: a callable sees every tick's progress (rows, the sources' read
and total sizes, the frontier's lag) up to one final report; ``progress=True`` draws a bar or
a status line on stderr; by default nothing is drawn when stderr is not a terminal."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import ddflow as dd
from ddflow.progress import RunProgress
from ddflow.sources import Source, SourceBatch

pytestmark = pytest.mark.timeout(60)


class Batches(Source):
    """``count`` batches of ``size`` rows, one per poll; its size known or not."""

    name = "batches"

    def __init__(self, count: int, size: int, known: bool = True) -> None:
        self.count, self.rows, self.known, self.sent = count, size, known, 0

    def poll(self) -> list[SourceBatch]:
        if self.sent == self.count:
            return []
        v = np.arange(self.sent * self.rows, (self.sent + 1) * self.rows, dtype=np.int64)
        self.sent += 1
        return [SourceBatch(pa.table({"k": v % 5, "v": v}), "batches")]

    @property
    def ended(self) -> bool:
        return self.sent == self.count

    def size(self) -> int | None:
        return self.count * self.rows if self.known else None

    def progress(self) -> int:
        return self.sent * self.rows


def _flow(*sources: Source) -> tuple[dd.Dataflow, dd.Capture]:
    flow = dd.Dataflow()
    collections = []
    for i, source in enumerate(sources):
        session, rows = flow.new_input({"k": "int64", "v": "int64"}, name=f"in{i}")
        flow.attach_source(session, source)
        collections.append(rows)
    total = collections[0]
    for c in collections[1:]:
        total = total.concat(c)
    return flow, total.group_by("k").agg(n=dd.count()).capture()


def test_a_callable_sees_every_tick_then_one_final_report() -> None:
    flow, cap = _flow(Batches(6, 100), Batches(3, 50))
    reports: list[RunProgress] = []
    flow.run(progress=reports.append)
    assert [r.final for r in reports].count(True) == 1 and reports[-1].final
    assert all(r.total == 750 for r in reports)
    reads = [r.read for r in reports]
    assert reads == sorted(reads) and reads[-1] == 750
    rows = [r.rows for r in reports]
    assert rows == sorted(rows) and rows[-1] == 750
    assert rows[0] == 150  # the first tick polls both sources once
    assert all(r.rate >= 0 and r.elapsed >= 0 for r in reports)
    assert all(r.frontier is not None and r.lag is not None and r.lag >= 0 for r in reports)
    assert sum(cap.state()["n"].to_pylist()) == 750


def test_a_source_of_unknown_size_gives_no_total() -> None:
    flow, _ = _flow(Batches(4, 10), Batches(2, 10, known=False))
    reports: list[RunProgress] = []
    flow.run(progress=reports.append)
    assert all(r.total is None and r.read is None for r in reports)
    assert reports[-1].rows == 60


@pytest.mark.parametrize("known", [True, False], ids=["bar", "status line"])
def test_progress_true_draws_on_stderr(known: bool, capsys: pytest.CaptureFixture[str]) -> None:
    flow, _ = _flow(Batches(3, 10, known=known))
    flow.run(progress=True)
    err = capsys.readouterr().err
    assert "ddflow run" in err and "rows/s" in err
    assert ("100%" in err) == known
    flow2, _ = _flow(Batches(3, 10))
    flow2.run()  # stderr is not a terminal under pytest: nothing drawn
    assert capsys.readouterr().err == ""


def test_a_bad_progress_argument_is_refused() -> None:
    flow, _ = _flow(Batches(1, 1))
    with pytest.raises(TypeError, match="progress must be"):
        flow.run(progress="yes")  # type: ignore[arg-type]


def test_without_tqdm_a_plain_status_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tqdm" else real(name, *a)
    )
    flow, _ = _flow(Batches(4, 25))
    flow.run(progress=True)
    err = capsys.readouterr().err
    assert err.endswith("\n") and "ddflow run: 100 rows" in err and "100% read" in err
