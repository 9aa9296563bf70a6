"""A Spark standalone cluster on this machine, from what the pyspark pip package ships: one
``Master`` and N ``Worker`` JVMs started with ``bin/spark-class`` (the pip package has no
``sbin/start-*.sh``), each in its own process group, on free ports, under one temporary
directory (work dirs, local dirs, logs).

Each worker has 1 core and its own environment, so its executor JVM (a
``CoarseGrainedExecutorBackend`` child of the worker) and that executor's Python workers are
its own. A worker's ``python`` is the interpreter behind the ``node-python`` wrapper
(``DDFLOW_NODE_PYTHON`` in the worker's environment, inherited by its executors): give the
application ``PYSPARK_PYTHON=<cluster>/node-python`` and every worker runs its own Python,
as every node of a real cluster has its own.

``Cluster.stop`` kills every process group it started (master, workers, their executors and
Python workers), also after a failed start.

Network: with ``Cluster(network=Network())`` every worker runs in its own network namespace
(``ip netns``), joined to a Linux bridge in the host's namespace by a veth pair: the master
and the driver listen on the bridge's address, each worker (and its executor, which it
starts) on its own address in its namespace, and executors fetch shuffle blocks from each
other over the bridge, as separate machines would. It needs root and ``ip``
(``netns_missing`` says why not); ``Network.remove`` deletes the namespaces (their veths go
with them) and the bridge.
Without it, everything listens on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

from ..jvm_options import java_options

SPARK_HOME = Path(pyspark.__file__).resolve().parent
"""The pyspark pip package: its ``bin/spark-class`` and ``jars``."""

HOST = "127.0.0.1"
"""Where everything listens without network namespaces."""


def java_missing() -> str | None:
    """Why a cluster cannot start here (no ``java`` on PATH nor under ``JAVA_HOME``), or
    None."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return None
    if shutil.which("java"):
        return None
    return "no Java: neither java on PATH nor JAVA_HOME/bin/java (a Spark cluster needs Java 17)"


def free_port(host: str = HOST) -> int:
    """A TCP port free on ``host``'s interface right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")


def netns_missing() -> str | None:
    """Why workers cannot get network namespaces here (not root, no ``ip``, or creating
    one fails), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no ip command (iproute2)"
    name = f"ddflow-probe-{os.getpid()}"
    try:
        _ip("netns", "add", name)
    except (RuntimeError, OSError) as exc:
        return f"cannot create a network namespace: {exc}"
    _ip("netns", "del", name)
    return None


@dataclass
class Network:
    """A bridge in the host's namespace and one namespace per worker (see the module doc).
    Names carry the test process's pid; the subnet is ``10.<a>.<b>.0/24`` from it."""

    tag: str = field(default_factory=lambda: str(os.getpid()))
    spaces: list[str] = field(default_factory=list)
    bridge_up: bool = False

    @property
    def bridge(self) -> str:
        return f"ddbr{self.tag}"

    def address(self, index: int) -> str:
        """The bridge's address (``index`` 0) or worker ``index - 1``'s."""
        pid = int(self.tag)
        return f"10.{200 + pid % 50}.{(pid // 50) % 250}.{1 + index}"

    @property
    def host(self) -> str:
        """The master's and the driver's address (on the bridge)."""
        return self.address(0)

    def create(self) -> None:
        """Creates the bridge with the host's address."""
        _ip("link", "add", self.bridge, "type", "bridge")
        self.bridge_up = True
        _ip("addr", "add", f"{self.host}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    def add(self) -> tuple[str, str]:
        """A new namespace joined to the bridge: its name and address."""
        i = len(self.spaces) + 1
        name, host_end, ns_end = (
            f"ddflow-{self.tag}-{i}",
            f"ddv{self.tag}h{i}",
            f"ddv{self.tag}n{i}",
        )
        _ip("netns", "add", name)
        self.spaces.append(name)
        _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        _ip("link", "set", host_end, "master", self.bridge, "up")
        _ip("link", "set", ns_end, "netns", name)
        address = self.address(i)
        for cmd in (
            ["link", "set", "lo", "up"],
            ["addr", "add", f"{address}/24", "dev", ns_end],
            ["link", "set", ns_end, "up"],
        ):
            _ip("netns", "exec", name, "ip", *cmd)
        return name, address

    def remove(self) -> None:
        """Deletes the namespaces (and their veths) and the bridge."""
        for name in self.spaces:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        self.spaces.clear()
        if self.bridge_up:
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, timeout=30)
            self.bridge_up = False


def children(pid: int) -> list[int]:
    """The direct children of process ``pid`` (from ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    """The command line of process ``pid`` ('' once it is gone)."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@dataclass
class Worker:
    """One worker JVM: its process, port, directory and Python."""

    proc: subprocess.Popen[bytes]
    port: int
    web_port: int
    directory: Path
    python: str
    host: str
    """Its address (its namespace's, or 127.0.0.1)."""
    killed: bool = False
    """Killed on purpose (``Cluster.kill_worker``)."""

    def executors(self) -> list[int]:
        """The pids of the worker's live executor JVMs (``CoarseGrainedExecutorBackend``)."""
        return [
            p
            for p in children(self.proc.pid)
            if "CoarseGrainedExecutorBackend" in cmdline(p) and alive(p)
        ]


@dataclass
class Cluster:
    """A standalone master and its workers (see the module doc)."""

    root: Path
    pythons: list[str]
    """Each worker's Python (behind ``node-python``)."""
    network: Network | None = None
    """The workers' namespaces and bridge (None: all on 127.0.0.1)."""
    master_port: int = 0
    master_web_port: int = 0
    master: subprocess.Popen[bytes] | None = None
    workers: list[Worker] = field(default_factory=list)

    @property
    def host(self) -> str:
        """Where the master listens, and where a driver should."""
        return self.network.host if self.network is not None else HOST

    @property
    def url(self) -> str:
        """The master's ``spark://`` URL."""
        return f"spark://{self.host}:{self.master_port}"

    @property
    def node_python(self) -> str:
        """The ``PYSPARK_PYTHON`` that runs each worker's own Python."""
        return str(self.root / "node-python")

    def _env(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = dict(os.environ)
        for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR", "PYTHONPATH"):
            env.pop(k, None)
        env.update(
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOCAL_IP=self.host,
            SPARK_DAEMON_MEMORY="256m",
            SPARK_DAEMON_JAVA_OPTS=java_options(),
            SPARK_LOG_DIR=str(self.root / "logs"),
            SPARK_NO_DAEMONIZE="1",
        )
        env.update(extra)
        return env

    def _spawn(
        self, name: str, args: list[str], extra: Mapping[str, str], netns: str | None = None
    ) -> subprocess.Popen[bytes]:
        log = open(self.root / "logs" / f"{name}.log", "wb")  # noqa: SIM115 - the child owns it
        inside = ["ip", "netns", "exec", netns] if netns else []  # exec: the same pid
        try:
            return subprocess.Popen(
                [*inside, str(SPARK_HOME / "bin" / "spark-class"), *args],
                env=self._env(extra),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.root,
                start_new_session=True,
            )
        finally:
            log.close()

    def start(self, timeout: float = 90.0) -> None:
        """Starts the master, then the workers; returns once every worker is ALIVE at the
        master."""
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        wrapper = self.root / "node-python"
        wrapper.write_text('#!/bin/sh\nexec "${DDFLOW_NODE_PYTHON:?not set}" "$@"\n')
        wrapper.chmod(0o755)
        if self.network is not None:
            self.network.create()
        self.master_port, self.master_web_port = free_port(self.host), free_port(self.host)
        self.master = self._spawn(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host", self.host,
                "--port", str(self.master_port),
                "--webui-port", str(self.master_web_port),
            ],
            {},
        )  # fmt: skip
        for i, python in enumerate(self.pythons):
            self.add_worker(python, f"worker{i}")
        self.wait_workers(len(self.pythons), timeout)

    def add_worker(self, python: str, name: str) -> Worker:
        """Starts one more worker (1 core, 1 GiB) whose executors run ``python``."""
        directory = self.root / name
        (directory / "work").mkdir(parents=True, exist_ok=True)
        (directory / "local").mkdir(exist_ok=True)
        netns, host = self.network.add() if self.network is not None else (None, HOST)
        port, web_port = free_port(), free_port()  # free in a new namespace too
        proc = self._spawn(
            name,
            [
                "org.apache.spark.deploy.worker.Worker",
                "--host", host,
                "--port", str(port),
                "--webui-port", str(web_port),
                "--cores", "1",
                "--memory", "1g",
                "--work-dir", str(directory / "work"),
                self.url,
            ],
            {
                "SPARK_LOCAL_DIRS": str(directory / "local"),
                "SPARK_LOCAL_IP": host,
                "DDFLOW_NODE_PYTHON": python,
            },
            netns,
        )  # fmt: skip
        worker = Worker(proc, port, web_port, directory, python, host)
        self.workers.append(worker)
        return worker

    def live(self) -> list[Worker]:
        """The workers not killed on purpose."""
        return [w for w in self.workers if not w.killed]

    def kill_worker(self, worker: Worker) -> None:
        """SIGKILLs a worker's process group: the worker JVM, its executors and their
        Python workers."""
        worker.killed = True
        os.killpg(worker.proc.pid, signal.SIGKILL)

    def state(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications)."""
        url = f"http://{self.host}:{self.master_web_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as r:
            return dict(json.load(r))

    def wait_workers(self, n: int, timeout: float) -> None:
        """Waits until ``n`` workers are ALIVE at the master (and no more: a killed worker
        is DEAD there once the master sees its connection drop)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            for p in [self.master, *(w.proc for w in self.live())]:
                if p is not None and p.poll() is not None:
                    raise RuntimeError(f"a cluster JVM exited: {p.args}\n{self.logs()}")
            try:
                last = self.state()
                if sum(w["state"] == "ALIVE" for w in last["workers"]) == n:
                    return
            except OSError as exc:
                last = exc
            time.sleep(0.5)
        raise TimeoutError(f"{n} workers not alive after {timeout} s: {last}\n{self.logs()}")

    def logs(self, tail: int = 3000) -> str:
        """The end of every log of the cluster (master, workers, executors' stderr)."""
        out = []
        paths = sorted((self.root / "logs").glob("*.log"))
        paths += sorted(self.root.glob("worker*/work/*/*/stderr"))
        for path in paths:
            text = path.read_text(errors="replace")
            out.append(f"--- {path.relative_to(self.root)}\n{text[-tail:]}")
        return "\n".join(out)

    def stop(self) -> None:
        """Kills every process group the cluster started (and waits for the leaders), then
        removes the network namespaces."""
        procs = [w.proc for w in self.workers] + ([self.master] if self.master else [])
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not wait
                print(f"cluster process {p.pid} did not exit", file=sys.stderr)
        if self.network is not None:
            self.network.remove()
