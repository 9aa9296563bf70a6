"""Opening a dataflow's checkpoint directory: what a persistent dataflow must be.

A persistent dataflow's state is rebuilt from what its sources read, so every input needs a
source that can say where it stands and resume from there (the file connectors can), and
times are ints (the run loop's). :func:`open_journal` checks that, naming the input or
source that does not fit, then opens (or creates) the directory for the dataflow's plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddflow.errors import PersistenceError
from ddflow.persist.journal import Journal, Persistence

if TYPE_CHECKING:
    from ddflow.dataflow import Dataflow

__all__ = ["open_journal"]


def open_journal(flow: Dataflow, config: Persistence) -> Journal:
    """The journal of ``flow`` at ``config.path``, after checking that every input is fed
    by a source that can resume."""
    fed = {id(a.session) for a in flow._loop.attached}
    for session in flow._inputs:
        if id(session) not in fed:
            raise PersistenceError(
                f"input {session.name!r} is fed by hand; a persistent dataflow rebuilds its "
                "inputs from what their sources read, so every input needs a source "
                "(dd.io.csv.read, dd.io.parquet.read, ...)"
            )
    for a in flow._loop.attached:
        if a.source.offset() is None:
            raise PersistenceError(
                f"{a.source.name} (feeding input {a.session.name!r}) cannot resume from an "
                "offset, so a persistent dataflow cannot use it yet"
            )
    if flow.time_shape.dims not in (None, 1):
        raise PersistenceError("a persistent dataflow needs int times (time_dims=1)")
    return Journal(config, flow.plan(), len(flow._loop.attached))
