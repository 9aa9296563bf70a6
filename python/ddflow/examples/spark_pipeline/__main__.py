"""``python -m ddflow.examples.spark_pipeline init DIR [--nodes N] [--edges M] | add DIR
[--inserts I] [--deletes D] | check DIR``.

``init`` writes the pipeline project and its first source file; ``add`` adds a source file
(new edges and retractions); ``check`` compares the ``distances`` table of the last
``spark-pipelines run`` (run in DIR) with a full recompute on the embedded engine, prints
what each refresh read, and exits 1 when they differ.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ddflow.examples.spark_pipeline import add, init, read_view, recompute, refreshes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ddflow.examples.spark_pipeline")
    sub = parser.add_subparsers(dest="command", required=True)
    p_init = sub.add_parser("init", help="write the project and its first source file")
    p_init.add_argument("dir")
    p_init.add_argument("--nodes", type=int, default=2_000)
    p_init.add_argument("--edges", type=int, default=4_000)
    p_init.add_argument("--seed", type=int, default=1)
    p_add = sub.add_parser("add", help="add a source file")
    p_add.add_argument("dir")
    p_add.add_argument("--inserts", type=int, default=100)
    p_add.add_argument("--deletes", type=int, default=20)
    p_add.add_argument("--seed", type=int, default=2)
    p_check = sub.add_parser("check", help="compare the view with a full recompute")
    p_check.add_argument("dir")
    args = parser.parse_args(argv)
    if args.command == "init":
        spec = init(args.dir, args.nodes, args.edges, args.seed)
        print(f"wrote {spec}; run: cd {args.dir} && SPARK_CONF_DIR=$PWD/conf spark-pipelines run")
        return 0
    if args.command == "add":
        print(f"wrote {add(args.dir, args.inserts, args.deletes, args.seed)}")
        return 0
    for r in refreshes(args.dir):
        print(f"refresh at time {r['time']}: read {r['rows']} rows from {r['files']}")
    got, want = read_view(args.dir), recompute(args.dir)
    if got.equals(want):
        print(f"distances: {got.num_rows} rows, equal to a full recompute")
        return 0
    print(f"distances: {got.num_rows} rows, a full recompute {want.num_rows}: they differ")
    return 1


if __name__ == "__main__":
    sys.exit(main())
