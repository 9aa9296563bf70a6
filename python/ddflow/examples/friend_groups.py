"""Connected components of a changing graph: friend groups as friendships come and go.

``python -m ddflow.examples.friend_groups [--people P] [--friendships F] [--rounds R]
[--changes C] [--seed S]``

``F`` random friendships among ``P`` people are loaded at time 0; each later round removes
``C`` of them and adds ``C`` new ones. ``dd.algorithms.connected_components`` labels every
person with a friendship by the least id in their group, and two small aggregates on top
count the groups and their sizes. After every round the example prints how many people
changed group, the number of groups and the largest group's size, and at the end checks the
groups against a union-find in Python.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from collections.abc import Sequence

import pyarrow.compute as pc

import ddflow as dd

__all__ = ["build", "main", "union_find_labels"]


def build(flow: dd.Dataflow) -> tuple[dd.InputSession, dd.Capture, dd.Capture]:
    """The friendships input (``src, dst``), a capture of each person's group label (``node,
    label``) and one of the group sizes (``label, size``)."""
    friends_in, friends = flow.new_input({"src": "int64", "dst": "int64"})
    labels = dd.algorithms.connected_components(friends)
    sizes = labels.group_by("label").agg(size=dd.count())
    return friends_in, labels.capture(), sizes.capture()


def union_find_labels(edges: Sequence[tuple[int, int]]) -> dict[int, int]:
    """Each node of ``edges`` with the least node of its undirected component."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in parent}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.examples.friend_groups", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--people", type=int, default=1000)
    parser.add_argument("--friendships", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--changes", type=int, default=50, help="removed and added per round")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    if min(args.people, args.friendships, args.rounds) < 1 or args.changes < 0:
        parser.error("--people, --friendships and --rounds must be at least 1, --changes 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the example; prints each round's group statistics and checks the final groups."""
    args = _parse(argv)
    rng = random.Random(args.seed)

    def friendship() -> tuple[int, int]:
        return rng.randrange(args.people), rng.randrange(args.people)

    flow = dd.Dataflow()
    friends_in, labels, sizes = build(flow)
    edges = [friendship() for _ in range(args.friendships)]
    for t in range(args.rounds):
        removed: list[tuple[int, int]] = []
        added = edges if t == 0 else [friendship() for _ in range(args.changes)]
        if t > 0:
            removed = rng.sample(edges, min(args.changes, len(edges)))
            for edge in removed:
                edges.remove(edge)
            edges += added
        for batch, diff in ((added, 1), (removed, -1)):
            if batch:
                columns = {"src": [a for a, _ in batch], "dst": [b for _, b in batch]}
                friends_in.update_batch(columns, times=t, diffs=diff)
        friends_in.advance_to(t + 1)
        flow.run_until(t + 1)
        updates = labels.updates()
        moved = len(set(updates.filter(pc.equal(updates["time"], t))["node"].to_pylist()))
        groups = sizes.at(t)
        largest = pc.max(groups["size"]).as_py() if groups.num_rows else 0
        print(
            f"round {t}: +{len(added)} -{len(removed)} friendships, {moved} people whose group "
            f"changed; {groups.num_rows} groups, the largest has {largest} people"
        )
    final = labels.at(args.rounds - 1)
    got = dict(zip(final["node"].to_pylist(), final["label"].to_pylist(), strict=True))
    expected = union_find_labels(edges)
    histogram = Counter(Counter(got.values()).values())
    print(
        "group sizes (size: groups): "
        + ", ".join(f"{s}: {n}" for s, n in sorted(histogram.items()))
    )
    print(f"groups after {args.rounds} rounds match a union-find: {got == expected}")
    return 0 if got == expected else 1


if __name__ == "__main__":
    raise SystemExit(main())
