"""A persistent dataflow's checkpoint: its manifest, the log of ticks, and input snapshots.

The files live in a :mod:`store <ddflow.persist.store>`: a local directory, or a prefix of an
object store (``s3://bucket/prefix``), where the log is an object per flush instead of a file
appended to, and every other file is written whole once. Layout (every file a checksummed
:mod:`segment <ddflow.persist.segment>`)::

    <path>/manifest-00000003.seg      the latest checkpoint: plan, snapshots, last tick
    <path>/snap-00000003-0000.seg     a layer of source 0's input: the ticks compacted by
                                      checkpoint 3 (or every earlier layer merged)
    <path>/log/00000000000000000042.log   ticks 42, 43, ...: what the sources read, offsets,
                                          and what was fed by hand (hand records)

The run loop appends a tick to the log, and flushes it to disk, after its sources' rows went
into the inputs and before the engine runs on them (a write-ahead log): no output can depend
on rows the log does not hold, and the offsets in the same record say where each source
resumes, so a row is neither lost nor read twice. Updates fed by hand wait in memory until
their input's frontier passes them (:meth:`Journal.advance_hand`, or a tick that advances
every input), then go to the log as a hand record with every hand-fed input's frontier
(:mod:`ddflow.persist.hand`): the log and the snapshots hold only updates before the logged
frontiers, so what a restart restores is exactly what comes before them. A record a crash
cut short at the end of the log was never acted on: a restart drops it (and says so); a
record damaged anywhere else is a :class:`~ddflow.errors.CorruptCheckpointError`.

Every ``interval`` a checkpoint compacts the ticks since the last one into a new snapshot
layer per input (merging an input's layers into one once it has ``MAX_LAYERS``), then
writes the next manifest (a new name, never overwritten), and only then deletes what it
replaces: a crash at any point leaves a manifest whose files are all there. Opening deletes
what a checkpoint a crash cut short left (snapshot layers the newest manifest does not name,
older manifests).

A directory belongs to one plan: the manifest stores the plan (without operator labels,
which name source lines) and a different plan is refused naming the first node that differs.
"""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ddflow.errors import PersistenceError, PlanError
from ddflow.persist.compact import advance, compact
from ddflow.persist.hand import Frontier, HandBatch, HandRecord, snapshot_of
from ddflow.persist.records import Snapshot, Tick
from ddflow.persist.segment import Segment, TruncatedSegment, decode, decode_at, encode
from ddflow.persist.store import Store, is_uri, open_store

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["Journal", "Persistence", "Restored"]

MANIFEST_FILE = re.compile(r"manifest-(\d{8})\.seg")
"""A checkpoint's manifest file name (its number in the group)."""
SPARK_STATE_MANIFEST_FILE = re.compile(r"manifest-(\d{8})\.json")
"""The manifest file name of a Spark backend's incremental state (``run_on_spark(...,
state=path)``), a directory this one is not (each backend refuses the other's)."""
_LOG = re.compile(r"(\d{20})\.log")
_INTERVAL = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*")
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
MAX_LAYERS = 8
"""Snapshot layers an input may have; the next checkpoint merges them into one."""


def _seconds(interval: float | str) -> float:
    """An interval as seconds: a number, or text such as ``"10s"``, ``"500ms"``, ``"2m"``."""
    if isinstance(interval, int | float) and not isinstance(interval, bool):
        seconds = float(interval)
    elif isinstance(interval, str) and (m := _INTERVAL.fullmatch(interval)):
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        raise PlanError(
            f"Persistence: interval must be seconds or text like '10s', '500ms', '2m'; "
            f"got {interval!r}"
        )
    if not seconds > 0:
        raise PlanError(f"Persistence: interval must be positive, got {interval!r}")
    return seconds


@dataclass(frozen=True)
class Persistence:
    """Where and how often a dataflow checkpoints (``dd.Dataflow(persistence=...)``).

    ``path``: a local directory (created if missing), or an object store's URI
    (``s3://bucket/prefix``; the bucket must exist) whose credentials and endpoint
    ``pyarrow.fs`` takes from the standard AWS environment variables or the URI's query.
    ``filesystem``: a ``pyarrow.fs.FileSystem`` the program built (an ``S3FileSystem`` with
    its endpoint and keys), ``path`` then being a path in it (``bucket/prefix``; a scheme
    in front is dropped). ``interval``: how often the log is compacted into a checkpoint,
    as seconds or text (``"10s"``, ``"500ms"``, ``"2m"``); every tick is logged durably
    whatever the interval.
    """

    path: str | os.PathLike[str]
    interval: float | str = "10s"
    filesystem: pafs.FileSystem | None = None

    def __post_init__(self) -> None:
        _seconds(self.interval)
        if self.filesystem is not None and not _is_filesystem(self.filesystem):
            raise PlanError(
                f"Persistence: filesystem must be a pyarrow.fs.FileSystem, got "
                f"{self.filesystem!r}"
            )

    @property
    def local(self) -> bool:
        """Whether the checkpoint is in a local directory (not an object store)."""
        if self.filesystem is not None:
            import pyarrow.fs

            return isinstance(self.filesystem, pyarrow.fs.LocalFileSystem)
        return not is_uri(os.fspath(self.path))

    @property
    def seconds(self) -> float:
        """The interval in seconds."""
        return _seconds(self.interval)


@dataclass
class Restored:
    """What a directory holds for a restart: snapshots, the ticks after them, offsets."""

    snapshots: list[Snapshot]
    ticks: list[Tick]
    since: int
    """The last checkpoint's frontier: outputs before it were delivered before the crash."""
    offsets: list[Any] | None
    """Each source's offset after the last tick (None for a fresh directory)."""
    target: int
    """The frontier the inputs had reached (0 for a fresh directory)."""
    hand: list[HandRecord] = field(default_factory=list)
    """The hand records logged after the snapshots, in order."""
    frontiers: list[Frontier] = field(default_factory=list)
    """Each hand-fed input's frontier: what is before it is restored, the program feeds
    again from it (None: the input was closed)."""
    dtypes: list[list[str] | None] = field(default_factory=list)
    """Each hand-fed input's column dtypes as its snapshot layers hold them."""


def _comparable(plan: dict[str, Any]) -> dict[str, Any]:
    """A plan without its labels (they name source lines, which edits move)."""
    nodes = [{k: v for k, v in node.items() if k != "label"} for node in plan["nodes"]]
    return {**plan, "nodes": nodes}


def _first_difference(stored: dict[str, Any], now: dict[str, Any]) -> str:
    """Text naming where two plans differ."""
    a, b = stored["nodes"], now["nodes"]
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"node {i} was {json.dumps(x)[:300]}, now {json.dumps(y)[:300]}"
    if len(a) != len(b):
        return f"the stored plan has {len(a)} nodes, this one {len(b)}"
    for key in sorted(set(stored) | set(now)):
        if key != "nodes" and stored.get(key) != now.get(key):
            return f"{key} was {stored.get(key)!r}, now {now.get(key)!r}"
    return "they differ"


class Journal:
    """The checkpoint directory of one dataflow, opened for a run."""

    def __init__(self, config: Persistence, plan: dict[str, Any], sources: int, hands: int = 0):
        self.config = config
        self.store: Store = open_store(os.fspath(config.path), config.filesystem)
        self.root = self.store.where
        self.sources = sources
        """How many sources the dataflow has (in attach order)."""
        self.hands = hands
        """How many inputs are fed by hand (their snapshot layers follow the sources')."""
        self.plan = _comparable(plan)
        self.last_checkpoint = time.monotonic()
        self.bytes_written = 0
        """Bytes of log, snapshot and manifest files written by this process."""
        names = self.store.names()
        numbers = sorted(int(m.group(1)) for n in names if (m := MANIFEST_FILE.fullmatch(n)))
        if not numbers and any(SPARK_STATE_MANIFEST_FILE.fullmatch(n) for n in names):
            raise PersistenceError(
                f"{self.root} holds a Spark state (run_on_spark(..., state=)), not the "
                "checkpoint of an embedded dataflow: the two keep different things (see the "
                "persistence docs). Use another directory for dd.Persistence"
            )
        if not numbers:
            self.manifest: dict[str, Any] = {
                "kind": "manifest",
                "number": 0,
                "plan": self.plan,
                "since": 0,
                "target": 0,
                "log_after": 0,
                "snapshots": [],
                "offsets": None,
                "hands": [{"frontier": 0, "dtypes": None} for _ in range(hands)],
            }
            self._write_manifest()
        else:
            self.manifest = self._read(self._manifest_name(numbers[-1])).header
            if self.manifest.get("plan") != self.plan:
                raise PersistenceError(
                    f"{self.root} holds the checkpoint of another plan: "
                    f"{_first_difference(self.manifest['plan'], self.plan)}. Use a new "
                    "directory, or delete this one to start over (see the persistence docs)"
                )
            self._clean(names, numbers)
        self.next_seq = self.manifest["log_after"] + 1
        self._unsynced: list[bytes] = []
        """Records written since the last flush, as bytes (logged together by :meth:`_sync`)."""
        self._unsynced_first = self.next_seq
        """The sequence number of the first of :attr:`_unsynced`."""
        self.pending: list[Tick | HandRecord] = []
        """The records logged since the last checkpoint (what the next one compacts)."""
        self.hand_frontiers: list[Frontier] = [0] * hands
        """Each hand-fed input's frontier now."""
        self.hand_logged: list[Frontier] = [0] * hands
        """Each hand-fed input's frontier as far as the log holds it."""
        self.hand_dtypes: list[list[str] | None] = [None] * hands
        """Each hand-fed input's column dtypes (known once it has fed a batch)."""
        self.unlogged: list[HandBatch] = []
        """Batches fed by hand and not logged yet."""

    @staticmethod
    def _manifest_name(number: int) -> str:
        return f"manifest-{number:08d}.seg"

    def _read(self, name: str) -> Segment:
        """The segment stored in file ``name``, checked (see :func:`decode`)."""
        return decode(self.store.read(name), f"{self.root}/{name}")

    def _write_segment(self, name: str, segment: Segment) -> None:
        data = encode(segment)
        self.store.write(name, data)
        self.bytes_written += len(data)

    def _write_manifest(self) -> None:
        self._write_segment(self._manifest_name(self.manifest["number"]), Segment(self.manifest))

    def _clean(self, names: list[str], numbers: list[int]) -> None:
        """Deletes what a checkpoint a crash interrupted left: snapshot layers the manifest
        does not name (written for a manifest never written) and earlier manifests."""
        named = set(self.manifest["snapshots"])
        stale = [n for n in names if n.startswith("snap-") and n not in named]
        stale += [self._manifest_name(n) for n in numbers[:-1]]
        if stale:
            self.store.delete(stale)

    # -- restart ------------------------------------------------------------------------------

    def restore(self) -> Restored:
        """The snapshots and ticks to replay (checked, in order). The snapshots' times are
        advanced to the last checkpoint's frontier (:func:`~ddflow.persist.compact.advance`),
        the ticks logged after it keep theirs (their outputs may not have been delivered)."""
        since = self.manifest["since"]
        snapshots = [advance(Snapshot.of(self._read(n)), since) for n in self.manifest["snapshots"]]
        logs = sorted(f"log/{n}" for n in self.store.names("log") if _LOG.fullmatch(n))
        entries: list[Tick | HandRecord] = []
        expected = self.manifest["log_after"] + 1
        for i, path in enumerate(logs):
            for entry in self._read_log(path, last=i == len(logs) - 1):
                if entry.seq < expected:
                    continue  # compacted into the snapshots; a crash came before deletion
                if entry.seq != expected:
                    raise PersistenceError(
                        f"{self.root}/{path}: tick {expected} is missing before tick "
                        f"{entry.seq}; the "
                        "log cannot be replayed"
                    )
                entries.append(entry)
                expected += 1
        self.next_seq = expected
        self._unsynced_first = expected
        self.pending = list(entries)
        ticks = [e for e in entries if isinstance(e, Tick)]
        offsets = ticks[-1].offsets if ticks else self.manifest["offsets"]
        target = ticks[-1].target if ticks else self.manifest["target"]
        hands = self.manifest.get("hands", [])
        if len(hands) != self.hands:
            raise PersistenceError(
                f"{self.root} holds {len(hands)} inputs fed by hand, this dataflow has "
                f"{self.hands}; use a new directory (see the persistence docs)"
            )
        frontiers = [_past(h["frontier"], self.manifest["target"]) for h in hands]
        for entry in entries:
            if isinstance(entry, HandRecord):
                frontiers = list(entry.frontiers)
            else:
                # The run loop advances every open input to a tick's target (holding the
                # gate from logging the tick to the advance: nothing is fed in between).
                frontiers = [_past(f, entry.target) for f in frontiers]
        self.hand_frontiers = list(frontiers)
        self.hand_logged = list(frontiers)
        self.hand_dtypes = [h["dtypes"] for h in hands]
        hand = [e for e in entries if isinstance(e, HandRecord)]
        for record in hand:  # the next checkpoint compacts them: their dtypes go with them
            for batch in record.batches:
                if self.hand_dtypes[batch.input] is None:
                    self.hand_dtypes[batch.input] = list(batch.dtypes)
        return Restored(
            snapshots,
            ticks,
            self.manifest["since"],
            offsets,
            target,
            hand,
            frontiers,
            list(self.hand_dtypes),
        )

    def _read_log(self, name: str, last: bool) -> list[Tick | HandRecord]:
        """The ticks of one log file. The last file may end in a record a crash cut
        short: it is cut off the file (never replayed) with a warning. (An object store's
        log objects are each written whole: one cut short is damage, not a crash.)"""
        data = self.store.read(name)
        ticks: list[Tick | HandRecord] = []
        at = 0
        while at < len(data):
            try:
                segment, at = decode_at(data, at, f"{self.root}/{name}")
            except TruncatedSegment as exc:
                if not last or not self.store.appends:
                    raise
                warnings.warn(
                    f"ddflow: {exc.args[0]} (the tick a crash interrupted; dropped)",
                    stacklevel=2,
                )
                self.store.truncate(name, at)
                break
            kind = segment.header.get("kind")
            ticks.append(HandRecord.of(segment) if kind == "hand" else Tick.of(segment))
        return ticks

    # -- running ------------------------------------------------------------------------------

    def append(self, tick: Tick) -> None:
        """Logs one tick durably (the run loop calls this before the engine runs on it).
        The run loop then advances every open input to the tick's target, those fed by hand
        too (holding the gate: nothing is fed in between), so what was fed by hand before
        the target is logged first, with that frontier."""
        self._write_hand([_past(f, tick.target) for f in self._hand_now()])
        self._write(tick)
        self._sync()

    # -- inputs fed by hand ---------------------------------------------------------------------

    def record_hand(self, batch: HandBatch) -> None:
        """Keeps a batch fed by hand until its input's frontier passes its updates."""
        if self.hand_dtypes[batch.input] is None:
            self.hand_dtypes[batch.input] = list(batch.dtypes)
        self.unlogged.append(batch)

    def advance_hand(self, index: int, frontier: Frontier) -> None:
        """Hand-fed input ``index`` advances to ``frontier`` (None: it closes): logs the
        new frontiers and every update fed by hand before them durably (unless the log
        holds them already), before the engine learns of the advance."""
        self.hand_frontiers[index] = frontier
        if self._write_hand(self._hand_now()):
            self._sync()

    def _hand_now(self) -> list[Frontier]:
        """Each hand-fed input's frontier to log: its own, or the logged one where that is
        ahead (a logged tick's target the run loop is advancing it to)."""
        pairs = zip(self.hand_frontiers, self.hand_logged, strict=True)
        return [_ahead(f, logged) for f, logged in pairs]

    def _split_hand(self, frontiers: list[Frontier]) -> list[HandBatch]:
        """Takes the updates fed by hand before ``frontiers`` out of :attr:`unlogged`
        (those at or after stay until their input's frontier passes them)."""
        before: list[HandBatch] = []
        after: list[HandBatch] = []
        for batch in self.unlogged:
            frontier = frontiers[batch.input]
            if frontier is None or bool((batch.times < frontier).all()):
                before.append(batch)
            elif bool((batch.times >= frontier).all()):
                after.append(batch)
            else:
                keep = batch.times < frontier
                before.append(batch.where(keep))
                after.append(batch.where(~keep))
        self.unlogged = after
        return before

    def _write_hand(self, frontiers: list[Frontier]) -> bool:
        """Appends a hand record of ``frontiers`` and the updates fed by hand before them
        when there is something the log does not hold yet; True when it did (not flushed
        to disk yet)."""
        batches = self._split_hand(frontiers)
        if not batches and frontiers == self.hand_logged:
            return False
        self._write(HandRecord(0, frontiers, batches))
        self.hand_logged = list(frontiers)
        return True

    def _write(self, record: Tick | HandRecord) -> None:
        """Adds a record to the log (logged durably by :meth:`_sync`)."""
        record.seq = self.next_seq
        self.pending.append(record)
        if not self._unsynced:
            self._unsynced_first = record.seq
        data = encode(record.segment())
        self._unsynced.append(data)
        self.bytes_written += len(data)
        self.next_seq += 1

    def _sync(self) -> None:
        """Logs the records written since the last flush durably, together."""
        assert self._unsynced
        self.store.append_log(self._unsynced_first, b"".join(self._unsynced))
        self._unsynced = []

    def close(self) -> None:
        """Closes the log file being appended to."""
        self.store.end_log()

    def due(self) -> bool:
        """Whether a checkpoint is due (``interval`` since the last one)."""
        return time.monotonic() - self.last_checkpoint >= self.config.seconds

    def checkpoint(self, frontier: int, offsets: list[Any]) -> None:
        """Compacts the ticks logged since the last checkpoint to ``frontier`` (all times
        before it are complete and delivered) into a new layer per input, merging an
        input's layers into one when it has more than ``MAX_LAYERS``; then writes the next
        manifest and deletes what it no longer names."""
        self.last_checkpoint = time.monotonic()
        self.close()
        now = self._hand_now()
        hands = [{"frontier": f, "dtypes": d} for f, d in zip(now, self.hand_dtypes, strict=True)]
        fed = self._split_hand(now)
        last = self.next_seq - 1
        if (
            last == self.manifest["log_after"]
            and frontier == self.manifest["since"]
            and not fed
            and hands == self.manifest.get("hands", [])
        ):
            return
        ticks = [r for r in self.pending if isinstance(r, Tick)]
        fed = [b for r in self.pending if isinstance(r, HandRecord) for b in r.batches] + fed
        number = self.manifest["number"] + 1
        layers: dict[int, list[str]] = {}
        for name in self.manifest["snapshots"]:
            layers.setdefault(_layer_source(name), []).append(name)
        written = []
        for source in range(self.sources + self.hands):
            names = layers.get(source, [])
            merge = len(names) >= MAX_LAYERS
            earlier = [Snapshot.of(self._read(n)) for n in names] if merge else []
            if source < self.sources:
                snapshot = compact(source, earlier, ticks, frontier)
            else:
                j = source - self.sources
                earlier += [snapshot_of(source, b) for b in fed if b.input == j]
                snapshot = compact(source, earlier, [], frontier)
            kept = [] if merge else names
            if snapshot is not None:
                name = f"snap-{number:08d}-{source:04d}.seg"
                self._write_segment(name, snapshot.segment())
                kept.append(name)
                written.append(name)
            layers[source] = kept
        old_manifest = self.manifest
        self.manifest = {
            **old_manifest,
            "number": number,
            "since": frontier,
            "target": ticks[-1].target if ticks else old_manifest["target"],
            "log_after": last,
            "snapshots": [n for source in sorted(layers) for n in layers[source]],
            "offsets": offsets,
            "hands": hands,
        }
        self.hand_logged = now
        self._write_manifest()
        self.pending = []
        stale = [f"log/{n}" for n in self.store.names("log") if _LOG.fullmatch(n)]
        stale += [n for n in old_manifest["snapshots"] if n not in self.manifest["snapshots"]]
        stale.append(self._manifest_name(old_manifest["number"]))
        self.store.delete(stale)


def _past(frontier: Frontier, target: int) -> Frontier:
    """An open input's frontier once the run loop advanced it to ``target``."""
    return None if frontier is None else max(frontier, target)


def _ahead(frontier: Frontier, logged: Frontier) -> Frontier:
    """A hand-fed input's frontier to log: its own, or the logged one when that is ahead (a
    tick's target the run loop is advancing it to)."""
    return None if frontier is None or logged is None else max(frontier, logged)


def _layer_source(name: str) -> int:
    """The source a snapshot layer's file name (``snap-<number>-<source>.seg``) is of."""
    return int(name.split("-")[2].split(".")[0])


def _is_filesystem(value: object) -> bool:
    """Whether ``value`` is a ``pyarrow.fs.FileSystem`` (imported here, not with ddflow: its
    object-store bindings hold about 6 MB of every process that never opens a store)."""
    import pyarrow.fs

    return isinstance(value, pyarrow.fs.FileSystem)
