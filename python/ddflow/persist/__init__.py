"""Persistent dataflows: a durable log of what the sources read and what the program fed by
hand, checkpoints, and restart.

``dd.Dataflow(persistence=dd.Persistence(path, interval="10s"))`` logs every tick of the run
loop (the rows each source read and where each source stands) before the engine runs on it,
and what is fed by hand once its input's frontier passes it (:mod:`ddflow.persist.hand`);
every ``interval`` it compacts the log into a checkpoint (:mod:`ddflow.persist.journal`), in a
local directory or on an object store (:mod:`ddflow.persist.store`).
Constructing the same dataflow with the same path and calling ``run()`` again rebuilds the
inputs from the checkpoint and the log, resumes each source after what it had read, tells
the program where to feed each input by hand again (``inp.frontier()``), and lets the sinks
skip what they had written: a run killed at any point and restarted writes the same
output as one that was never interrupted.
"""

from ddflow.errors import CorruptCheckpointError, PersistenceError
from ddflow.persist.journal import Journal, Persistence

__all__ = ["CorruptCheckpointError", "Journal", "Persistence", "PersistenceError"]
