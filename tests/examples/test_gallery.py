"""The examples gallery (``python -m ddflow.examples.<name>``): each runs with small
arguments, prints what ``docs/examples.md`` shows, and checks itself against a recount."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from ddflow.examples import friend_groups, orders_dashboard, top_sellers

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
