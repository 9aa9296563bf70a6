"""Loading 1M short string rows with ``update_batch``: the Arrow-buffer path against the
per-value object path it replaced, from several column sources, in one process.

``python benches/string_load.py [--rows 1000000] [--repeat 3]``

For each source (pyarrow array, numpy object array, Python list, pandas and polars frames
when installed) it times ``update_batch`` + ``advance_to`` + ``run_until`` into an input with
one ``str`` column and no consumers, fastest of ``--repeat``. The ``object path`` rows force
the former conversion (every value through a numpy object array and a Python-level type
check) by disabling the Arrow path for the run, so both figures come from the same build.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

import ddflow as dd
import ddflow.input as ddinput


def load_seconds(batch: Any) -> float:
    """Seconds to load ``batch`` (one column ``s``) at time 0 and run to time 1."""
    flow = dd.Dataflow(log=False)
    inp, _ = flow.new_input(("s",))
    t = time.perf_counter()
    inp.update_batch(batch, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    return time.perf_counter() - t


def sources(rows: int) -> dict[str, Callable[[], Any]]:
    """Ways a user may hold the column, each building the batch (not timed)."""
    values = [f"k{i % 50_000}" for i in range(rows)]
    arrow = pa.array(values)
    out: dict[str, Callable[[], Any]] = {
        "pyarrow array": lambda: {"s": arrow},
        "numpy object array": lambda: {"s": np.array(values, dtype=object)},
        "python list": lambda: {"s": values},
    }
    try:
        import pandas as pd

        out["pandas frame"] = lambda: pd.DataFrame({"s": values})
    except ImportError:
        pass
    try:
        import polars as pl

        out["polars frame"] = lambda: pl.DataFrame({"s": values})
    except ImportError:
        pass
    return out


def main() -> None:
    """Prints a markdown table: source, Arrow path s, object path s, ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    arrow_path = ddinput.arrow_utf8_column
    all_sources = sources(args.rows)
    load_seconds(next(iter(all_sources.values()))())  # warm-up: interns the distinct strings
    print(f"{args.rows:,} rows, fastest of {args.repeat}\n")
    print("| source | Arrow-buffer path s | object path s | speed-up |")
    print("| --- | --- | --- | --- |")
    for name, make in all_sources.items():
        fast = min(load_seconds(make()) for _ in range(args.repeat))
        ddinput.arrow_utf8_column = lambda *_: None  # type: ignore[assignment]
        try:
            slow = min(load_seconds(make()) for _ in range(args.repeat))
        finally:
            ddinput.arrow_utf8_column = arrow_path
        print(f"| {name} | {fast:.3f} | {slow:.3f} | {slow / fast:.1f}x |")


if __name__ == "__main__":
    main()
