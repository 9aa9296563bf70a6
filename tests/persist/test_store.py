"""The journal's stores (``ddflow.persist.store``) against a dict of names to bytes: random
sequences of whole writes, log appends, ends of a log file, truncations and deletes leave a
local directory and an S3-compatible server (``s3s-fs``) holding what the dict holds.

A local log file grows by appends until ``end_log``; on an object store each append is an
object of its own (named by its first record's number): the model follows each.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.persist.s3_server import S3Server

from ddflow.persist.store import LocalStore, ObjectStore, Store

pytestmark = pytest.mark.timeout(120)

_names = st.sampled_from(["manifest-00000001.seg", "snap-00000001-0000.seg", "x.seg"])
_data = st.binary(max_size=40)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("write"), _names, _data),
        st.tuples(st.just("append"), st.integers(1, 30), _data),
        st.tuples(st.just("end"), st.none(), st.none()),
        st.tuples(st.just("truncate"), st.none(), st.integers(0, 50)),
        st.tuples(st.just("delete"), st.none(), st.none()),
    ),
    max_size=12,
)
_buckets = itertools.count()


def _check(store: Store, ops: list[tuple[str, Any, Any]]) -> None:
    model: dict[str, bytes] = {}
    log: str | None = None  # the local log file being appended to
    for op, a, b in ops:
        if op == "write":
            store.write(a, b)
            model[a] = b
        elif op == "append":
            name = f"log/{a:020d}.log"
            if store.appends and log is not None:
                name = log
            store.append_log(a, b)
            model[name] = model.get(name, b"") + b if store.appends else b
            log = name
        elif op == "end":
            store.end_log()
            log = None
        elif op == "truncate" and model:
            name = sorted(model)[0]
            if name == log:
                continue  # the journal cuts only a log it is not appending to
            size = min(b, len(model[name]))  # the journal cuts, never extends
            store.truncate(name, size)
            model[name] = model[name][:size]
        elif op == "delete" and model:
            name = sorted(model)[-1]
            if name == log:
                store.end_log()
                log = None
            store.delete([name, "absent.seg"])
            del model[name]
    store.end_log()
    held = {n: store.read(n) for n in store.names() + [f"log/{n}" for n in store.names("log")]}
    assert held == model


@settings(max_examples=60, deadline=None)
@given(ops=_ops)
def test_a_local_directory_holds_what_the_model_holds(ops: list[tuple[str, Any, Any]]) -> None:
    with tempfile.TemporaryDirectory() as root:
        _check(LocalStore(Path(root) / "state"), ops)


@settings(max_examples=25, deadline=None)
@given(ops=_ops)
def test_an_object_store_holds_what_the_model_holds(
    s3_server: S3Server, ops: list[tuple[str, Any, Any]]
) -> None:
    fs = s3_server.filesystem()
    bucket = f"store-{next(_buckets)}"
    fs.create_dir(bucket)
    where = f"s3://{bucket}/state"
    _check(ObjectStore(fs, f"{bucket}/state", where), ops)
