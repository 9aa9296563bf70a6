"""The main job ``python -m ddflow.examples.bfs``: arguments, graph generation, a small run."""

from __future__ import annotations

import numpy as np
import pytest

from ddflow.examples import bfs


def test_random_graph_is_seeded() -> None:
    a = bfs.random_graph(100, 50, seed=3)
    b = bfs.random_graph(100, 50, seed=3)
    c = bfs.random_graph(100, 50, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0], c[0])
    assert a[0].dtype == np.int64 and a[0].max() < 100 and len(a[1]) == 50


def test_bad_arguments_exit() -> None:
    with pytest.raises(SystemExit):
        bfs.main(["10", "0", "1", "1"])
    with pytest.raises(SystemExit):
        bfs.main(["10", "10", "1", "1", "--resolution", "medium"])


@pytest.mark.parametrize("resolution", ["high", "low"])
def test_small_run_prints_a_summary(resolution: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs.main(["30", "40", "4", "10", "--resolution", resolution, "--inspect"]) == 0
    out = capsys.readouterr().out.splitlines()
    summary = out[-1]
    assert summary.startswith("bfs: 30 nodes, 40 edges, 10 updates in batches of 4")
    for part in ("load", "updates/s", "peak memory", f"({resolution} resolution)"):
        assert part in summary
    rounds = [line for line in out[:-1] if line.startswith("round ")]
    assert len(rounds) == 1 + 3  # the load, then 10 updates in batches of 4
    assert all(" net: " in line for line in rounds)


def test_inspect_times_prints_every_change(capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs.main(["30", "40", "4", "10", "--inspect-times"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("time ") and " dist " in line for line in out[:-1])


def test_log_can_be_turned_off() -> None:
    import ddflow as dd

    flow = dd.Dataflow(log=False)
    inp, coll = flow.new_input(("x",))
    cap = coll.select(y=dd.col("x") + 1).capture()
    inp.update_at((1,), time=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert cap.at(0).column("y").to_pylist() == [2]
    assert flow.log() == [] or len(flow.log()) == 0
