"""The examples gallery (``python -m ddflow.examples.<name>``): each runs with small
arguments, prints what ``docs/examples.md`` shows, and checks itself against a recount."""

from __future__ import annotations

import datetime
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import pyarrow as pa
import pytest

import ddflow as dd
from ddflow.examples import clickstream, friend_groups, orders_dashboard, sssp, top_sellers

GALLERY = ["orders_dashboard", "top_sellers", "friend_groups"]


@pytest.mark.timeout(60)
def test_orders_dashboard(capsys: pytest.CaptureFixture[str]) -> None:
    assert orders_dashboard.main(["--rounds", "4", "--orders", "30", "--customers", "12"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out if line.startswith("round ")] == [
        f"round {t}" for t in range(4)
    ]
    assert any("signed up" in line for line in out)
    assert any(line.lstrip().startswith("- ") for line in out)  # a retracted dashboard row
    assert out[-1].startswith("total revenue ")
    total, expected = out[-1].removeprefix("total revenue ").split(" (the open orders sum to ")
    assert total == expected.rstrip(")") and "." in total  # exact decimals, two places


@pytest.mark.timeout(60)
def test_top_sellers(capsys: pytest.CaptureFixture[str]) -> None:
    assert top_sellers.main(["--rounds", "3", "--sales", "40", "--k", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "leaderboards after 3 rounds match a recount: True"
    assert any(line.strip().startswith("-> ") for line in out)


@pytest.mark.timeout(60)
def test_friend_groups(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--people", "60", "--friendships", "40", "--rounds", "3", "--changes", "5"]
    assert friend_groups.main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "groups after 3 rounds match a union-find: True"
    assert out[0].startswith("round 0: +40 -0 friendships")


def test_union_find_labels() -> None:
    assert friend_groups.union_find_labels([(3, 1), (1, 2), (5, 5), (7, 6)]) == {
        1: 1,
        2: 1,
        3: 1,
        5: 5,
        6: 6,
        7: 6,
    }


@pytest.mark.parametrize(
    "main", [orders_dashboard.main, top_sellers.main, friend_groups.main], ids=GALLERY
)
def test_bad_arguments_exit(main: Callable[[list[str]], int]) -> None:
    with pytest.raises(SystemExit):
        main(["--rounds", "0"])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("module", GALLERY)
def test_runs_as_a_module(module: str) -> None:
    """``python -m ddflow.examples.<name>`` with its default arguments exits 0."""
    done = subprocess.run(
        [sys.executable, "-m", f"ddflow.examples.{module}"],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].endswith(("True", ")"))


# -- sssp: weighted shortest paths under edge changes --------------------------------------


@pytest.mark.timeout(60)
def test_sssp(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--nodes", "40", "--edges", "80", "--rounds", "4", "--changes", "9", "--seed", "2"]
    assert sssp.main([*args, "--workers", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "distances after 4 rounds match Dijkstra (every round): True"
    assert out[0].startswith("round 0: +80 edges; ")
    assert "round 1: +3 -3 edges, 3 reweighted; " in "\n".join(out)
    assert any(" -> " in line and line.startswith("  node ") for line in out[1:])


def test_sssp_dijkstra_and_mismatches() -> None:
    edges = [(0, 1, 4), (0, 2, 1), (2, 1, 2), (1, 3, 5), (4, 0, 1)]
    assert sssp.dijkstra(edges, 0) == {0: 0, 1: 3, 2: 1, 3: 8}
    assert sssp.mismatches({0: 0, 1: 4, 4: 2}, {0: 0, 1: 3, 3: 8}) == [
        "node 1: got 4, expected 3",
        "node 3: got -, expected 8",
        "node 4: got 2, expected -",
    ]


@pytest.mark.timeout(60)
def test_sssp_catches_a_wrong_distance(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reference one off at one node fails the check in the round it differs."""
    right = sssp.dijkstra

    def off_by_one(edges: Iterable[tuple[int, int, int]], source: int) -> dict[int, int]:
        dist = right(edges, source)
        dist[max(dist)] += 1
        return dist

    monkeypatch.setattr(sssp, "dijkstra", off_by_one)
    assert sssp.main(["--nodes", "20", "--edges", "40", "--rounds", "2", "--changes", "3"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].endswith("match Dijkstra (every round): False")
    assert any(line.startswith("round 0 differs from Dijkstra: node ") for line in out)


# -- clickstream: event-time windows, sessions and late views ------------------------------


@pytest.mark.timeout(60)
def test_clickstream(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--events", "300", "--users", "6", "--window", "30", "--batch", "5", "--seed", "3"]
    args += ["--workers", "2"]
    assert clickstream.main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "windows, sessions and late views match a recount: True"
    assert any(line.startswith("  window ") and " final: /" in line for line in out)
    assert any(" final: u" in line for line in out)  # sessions
    assert any(line.startswith("  late: u") for line in out)


def _at(seconds: int) -> datetime.datetime:
    return clickstream.START + datetime.timedelta(seconds=seconds)


SMALL_STREAM = [
    clickstream.Click(_at(5), "ann", "/a", 0),
    clickstream.Click(_at(50), "ann", "/a", 0),
    clickstream.Click(_at(75), "bob", "/b", 1),  # watermark after time 1: 65
    clickstream.Click(_at(30), "bob", "/b", 2),  # 30 < 65: late
    clickstream.Click(_at(130), "bob", "/b", 2),
]


def test_clickstream_recount() -> None:
    """The recount of a hand-checked stream: window 60 s, lateness 10 s, gap 30 s."""
    got = clickstream.recount(SMALL_STREAM, window=60, lateness=10, gap=30)
    assert got.late == Counter([SMALL_STREAM[3]])
    assert got.windows == Counter([(_at(0), "/a", 2), (_at(60), "/b", 1), (_at(120), "/b", 1)])
    # [0, 60) closes at time 1 (watermark 65), [60, 120) at time 2 (120); [120, 180) is open.
    assert got.final_windows == Counter([(_at(0), "/a", 2, 1), (_at(60), "/b", 1, 2)])
    # ann: [5, 35) closes at time 0 (watermark 40), [50, 80) at time 2; bob's [75, 105) at 2.
    assert got.final_sessions == Counter(
        [
            ("ann", _at(5), _at(35), 1, 0),
            ("ann", _at(50), _at(80), 1, 2),
            ("bob", _at(75), _at(105), 1, 2),
        ]
    )


@pytest.mark.timeout(60)
def test_clickstream_dataflow_matches_the_small_recount() -> None:
    flow = dd.Dataflow()
    clicks_in, outputs = clickstream.build(flow, window=60, lateness=10, gap=30)
    for t in range(3):
        rows = [c._asdict() for c in SMALL_STREAM if c.time == t]
        clicks_in.update_batch(pa.Table.from_pylist(rows, clickstream.CLICKS), times=t)
        clicks_in.advance_to(t + 1)
        flow.run_until(t + 1)
    got = clickstream.results_of(
        outputs.windows.updates().to_pylist(),
        outputs.sessions.updates().to_pylist(),
        outputs.late.updates().to_pylist(),
        outputs.open_windows.state(),
    )
    expected = clickstream.recount(SMALL_STREAM, window=60, lateness=10, gap=30)
    assert clickstream.mismatches(got, expected) == []
    got.final_windows[_at(0), "/a", 2, 1] = 0  # a final window missing
    got.late[SMALL_STREAM[4]] += 1  # an on-time view set aside
    assert clickstream.mismatches(got, expected) == [
        f"late: {SMALL_STREAM[4]}: got 1, expected 0",
        f"final_windows: {(_at(0), '/a', 2, 1)}: got 0, expected 1",
    ]


@pytest.mark.timeout(60)
def test_clickstream_catches_a_wrong_count(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recount that expects one more view in a window fails the check."""
    right = clickstream.recount

    def one_more(
        clicks: Sequence[clickstream.Click], window: int, lateness: int, gap: int
    ) -> clickstream.Results:
        out = right(clicks, window, lateness, gap)
        start, page, views = min(out.windows)
        out.windows[start, page, views] -= 1
        out.windows[start, page, views + 1] += 1
        return out

    monkeypatch.setattr(clickstream, "recount", one_more)
    assert clickstream.main(["--events", "100", "--users", "4", "--seed", "5"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "windows, sessions and late views match a recount: False"
    assert sum(line.startswith("  differs from the recount: windows: ") for line in out) == 2


# -- sssp and clickstream as modules, and their argument checks -----------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("module", ["sssp", "clickstream"])
def test_sssp_and_clickstream_run_as_modules(module: str) -> None:
    test_runs_as_a_module(module)


@pytest.mark.parametrize(
    ("main", "bad"),
    [
        (sssp.main, ["--rounds", "0"]),
        (sssp.main, ["--max-weight", "1"]),
        (sssp.main, ["--nodes", "4", "--edges", "7"]),
        (sssp.main, ["--workers", "0"]),
        (clickstream.main, ["--events", "0"]),
        (clickstream.main, ["--window", "0"]),
        (clickstream.main, ["--lateness", "-1"]),
        (clickstream.main, ["--workers", "0"]),
    ],
)
def test_sssp_and_clickstream_bad_arguments_exit(
    main: Callable[[list[str]], int], bad: list[str]
) -> None:
    with pytest.raises(SystemExit):
        main(bad)
