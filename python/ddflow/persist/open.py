"""Opening a dataflow's checkpoint directory: what a persistent dataflow must be.

A persistent dataflow's state is rebuilt from what its sources read and what the program fed
by hand, so every source must say where it stands and resume from there (the file connectors
can), and times are ints (the run loop's). :func:`open_journal` checks that, naming the
source that does not fit, then opens (or creates) the directory for the dataflow's plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ddflow.errors import PersistenceError
from ddflow.input import InputSession
from ddflow.persist.journal import Journal, Persistence
from ddflow.sources import Source

__all__ = ["hand_fed", "open_journal"]


def open_journal(
    config: Persistence,
    plan: dict[str, Any],
    inputs: Sequence[InputSession],
    sources: Sequence[tuple[InputSession, Source]],
    time_dims: int | None,
) -> Journal:
    """The journal of a dataflow (its ``plan``, ``inputs`` and the ``sources`` feeding
    them, in attach order) at ``config.path``, after checking that every source can resume;
    the inputs without a source are fed by hand (:func:`hand_fed`)."""
    for session, source in sources:
        if source.offset() is None:
            raise PersistenceError(
                f"{source.name} (feeding input {session.name!r}) cannot resume from an "
                "offset, so a persistent dataflow cannot use it yet"
            )
    for _, source in sources:
        source.durable = True
    if time_dims not in (None, 1):
        raise PersistenceError("a persistent dataflow needs int times (time_dims=1)")
    return Journal(config, plan, len(sources), len(hand_fed(inputs, sources)))


def hand_fed(
    inputs: Sequence[InputSession], sources: Sequence[tuple[InputSession, Source]]
) -> list[InputSession]:
    """The inputs no source feeds, in the order the dataflow created them."""
    fed = {id(session) for session, _ in sources}
    return [session for session in inputs if id(session) not in fed]
