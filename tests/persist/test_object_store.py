"""Persistence on an S3-compatible object store, against a real server (``s3s-fs``, see
``s3_server.py``): a dataflow checkpointing to ``bucket/prefix`` resumes after a restart
exactly as one run never interrupted; a damaged object is a ``CorruptCheckpointError``;
another plan is refused; a checkpoint cut short before its manifest leaves the one before
it, and the objects it wrote are cleaned up; a missing bucket, an unreachable endpoint and
an unknown scheme are a ``PersistenceError`` before anything is written.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from tests.io.sinkfiles import final_state, read_sink
from tests.persist.crash import (
    SINKS,
    pipeline_command,
    run_command,
    run_command_killed_in_progress,
    run_whole,
    updates,
    write_inputs,
)
from tests.persist.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.persist.test_hand_fed import Program, _feed_from, _history, _reference

import ddflow as dd
from ddflow.persist.store import ObjectStore

pytestmark = pytest.mark.timeout(120)

_buckets = itertools.count()


@pytest.fixture
def s3(s3_server: S3Server) -> tuple[pafs.S3FileSystem, str]:
    """A client of the server and a new bucket's prefix for the test's checkpoint."""
    fs = s3_server.filesystem()
    bucket = f"test-{next(_buckets)}"
    fs.create_dir(bucket)
    return fs, f"{bucket}/state"


def _objects(fs: pafs.FileSystem, prefix: str) -> list[str]:
    infos = fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
    return sorted(i.path[len(prefix) + 1 :] for i in infos if i.type == pafs.FileType.File)


def test_a_restart_from_the_object_store_equals_one_run(
    s3: tuple[pafs.S3FileSystem, str],
) -> None:
    fs, prefix = s3
    history = _history(2, 16)
    first = Program(prefix, "1ms", fs)  # a checkpoint at every run_until
    _feed_from(first, history, 10)
    names = _objects(fs, prefix)
    assert any(n.startswith("snap-") for n in names) and "log" not in names, names
    restarted = Program(prefix, "1ms", fs)
    assert restarted.a_in.frontier() == 10 and restarted.b_in.frontier() == 10
    since = restarted.flow.resumed_since
    assert 0 < since <= 10
    _feed_from(restarted, history, 16)
    reference = _reference(history, 16)
    for t in range(since - 1, 16):
        assert restarted.at(t) == reference.at(t), t


def test_the_log_alone_restores_each_group_of_ticks_an_object(
    s3: tuple[pafs.S3FileSystem, str],
) -> None:
    fs, prefix = s3
    history = _history(1, 12)
    first = Program(prefix, "1h", fs)  # no checkpoint: everything is in the log
    _feed_from(first, history, 8)
    logs = [n for n in _objects(fs, prefix) if n.startswith("log/")]
    assert len(logs) > 1, logs  # no append on an object store: an object per flush
    restarted = Program(prefix, "1h", fs)
    assert restarted.a_in.frontier() == 8 and restarted.b_in.frontier() == 8
    _feed_from(restarted, history, 12)
    reference = _reference(history, 12)
    for t in range(12):
        assert restarted.at(t) == reference.at(t), t


def test_a_file_source_resumes_and_writes_nothing_more(
    tmp_path: Path, s3_server: S3Server, s3: tuple[pafs.S3FileSystem, str]
) -> None:
    fs, prefix = s3
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.csv").write_text("k,v\n1,2\n1,3\n2,5\n")

    def flow(agg: str = "sum") -> dd.Dataflow:
        # The path as a URI, the endpoint in its query and the keys from the environment.
        uri = f"s3://{prefix}?endpoint_override={s3_server.endpoint}&scheme=http"
        flow = dd.Dataflow(persistence=dd.Persistence(uri, interval="1h"), log=False)
        rows = dd.io.csv.read(flow, src, schema={"k": "int64", "v": "int64"})
        part = dd.sum("v") if agg == "sum" else dd.max("v")
        dd.io.parquet.write(rows.group_by("k").agg(total=part), tmp_path / "out")
        return flow

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        env.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        env.setenv("AWS_DEFAULT_REGION", "us-east-1")
        flow().run(progress=False)
        written = sorted(p.name for p in (tmp_path / "out").iterdir())
        flow().run(progress=False)
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == written
        _, rows = read_sink(tmp_path / "out")
        assert final_state(rows) == {(1, 5): 1, (2, 5): 1}
        with pytest.raises(dd.PersistenceError, match=r"another plan: node \d+ was .*sum"):
            flow("max").run(progress=False)


def test_a_pipeline_killed_and_restarted_on_the_store_equals_one_run(
    tmp_path: Path,
    s3_server: S3Server,
    s3: tuple[pafs.S3FileSystem, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The crash test's file pipeline (``pipeline.py``, a process killed with SIGKILL
    while at work, then restarted) with its checkpoint on the store: a short version."""
    _, prefix = s3
    source = tmp_path / "in"
    write_inputs(source, files=20, rows=100, seed=3)
    whole = run_whole(source, tmp_path / "reference", None)
    reference = {sink: updates(tmp_path / "reference", sink) for sink in SINKS}
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{s3_server.endpoint}")
    out = tmp_path / "out"
    command = pipeline_command(source, out, f"s3://{prefix}")
    rng = random.Random(5)
    kills = sum(
        run_command_killed_in_progress(command, out, rng, min(0.2, whole / 10)) for _ in range(2)
    )
    run_command(command)
    assert kills >= 1
    for sink in SINKS:
        assert updates(out, sink) == reference[sink], sink


@pytest.mark.parametrize(("damage", "kind"), [("truncate", "snap-"), ("flip", "manifest-")])
def test_a_damaged_object_is_refused_naming_it(
    s3: tuple[pafs.S3FileSystem, str], damage: str, kind: str
) -> None:
    fs, prefix = s3
    _feed_from(Program(prefix, "1ms", fs), _history(5, 6), 6)
    damaged = next(n for n in _objects(fs, prefix) if n.startswith(kind))
    path = f"{prefix}/{damaged}"
    with fs.open_input_stream(path) as f:
        data = bytearray(f.read())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 2] ^= 0x40
    with fs.open_output_stream(path) as f:
        f.write(bytes(data))
    with pytest.raises(dd.CorruptCheckpointError, match=damaged):
        Program(prefix, "1ms", fs).flow.run_until(0)


def test_a_checkpoint_cut_short_before_its_manifest_leaves_the_one_before(
    s3: tuple[pafs.S3FileSystem, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, prefix = s3
    history = _history(3, 14)
    first = Program(prefix, "1ms", fs)
    _feed_from(first, history, 6)
    before = [n for n in _objects(fs, prefix) if n.startswith("manifest-")]
    write = ObjectStore.write

    def crash_at_the_manifest(self: ObjectStore, name: str, data: bytes) -> None:
        if name.startswith("manifest-"):
            raise KeyboardInterrupt("the crash")  # the process dies here
        write(self, name, data)

    monkeypatch.setattr(ObjectStore, "write", crash_at_the_manifest)
    with pytest.raises(KeyboardInterrupt):
        _feed_from(first, history, 10)
    monkeypatch.undo()
    names = _objects(fs, prefix)
    assert [n for n in names if n.startswith("manifest-")] == before
    number = int(before[0].split("-")[1].split(".")[0])
    orphans = [n for n in names if n.startswith(f"snap-{number + 1:08d}-")]
    assert orphans, names  # the snapshots of the checkpoint the crash cut short
    restarted = Program(prefix, "1h", fs)  # no checkpoint to write the same names again
    start = restarted.a_in.frontier()  # the checkpoint opens
    assert not set(orphans) & set(_objects(fs, prefix))  # cleaned up
    assert isinstance(start, int) and 6 <= start <= 10
    _feed_from(restarted, history, 14)
    reference = _reference(history, 14)
    for t in range(restarted.flow.resumed_since, 14):
        assert restarted.at(t) == reference.at(t), t


def test_a_missing_bucket_is_refused_before_anything_is_written(s3_server: S3Server) -> None:
    fs = s3_server.filesystem()
    flow = dd.Dataflow(persistence=dd.Persistence("no-such-bucket/state", filesystem=fs))
    session, rows = flow.new_input({"k": "int64"}, name="by_hand")
    rows.capture()
    with pytest.raises(dd.PersistenceError, match="no-such-bucket/state.*does not exist"):
        session.frontier()
    assert fs.get_file_info("no-such-bucket").type == pafs.FileType.NotFound


def _nowhere() -> pafs.S3FileSystem:
    """A client of a port no server listens on (one attempt per request)."""
    return pafs.S3FileSystem(
        endpoint_override="http://127.0.0.1:9",
        scheme="http",
        access_key="k",
        secret_key="s",
        region="us-east-1",
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1),
    )


@pytest.mark.parametrize(
    ("path", "filesystem", "message"),
    [
        ("s3://b/state", _nowhere, "'s3://b/state': the store is unreachable"),
        ("nosuch://b/state", lambda: None, "'nosuch://b/state'"),
    ],
)
def test_an_unreachable_store_or_unknown_scheme_is_refused(
    path: str, filesystem: Callable[[], pafs.FileSystem | None], message: str
) -> None:
    flow = dd.Dataflow(persistence=dd.Persistence(path, filesystem=filesystem()))
    session, rows = flow.new_input({"k": "int64"}, name="by_hand")
    rows.capture()
    with pytest.raises(dd.PersistenceError, match=message):
        session.frontier()


def test_only_a_local_path_takes_the_spill_files(tmp_path: Path) -> None:
    """Spill files go to the persistence path only when it is local (``Persistence.local``):
    with an object store they stay on local disk."""
    assert dd.Persistence(tmp_path).local
    assert dd.Persistence(str(tmp_path), filesystem=pafs.LocalFileSystem()).local
    assert not dd.Persistence("s3://bucket/state").local
    assert not dd.Persistence("bucket/state", filesystem=_nowhere()).local
