"""One thread at a time into an engine, and hand-offs that a Ctrl-C cannot split.

An engine runs one call at a time: while ``run_until`` runs (with the GIL released), any
other call into the native engine would fail with PyO3's "Already borrowed", and an input's
buffer appended to by one thread while another hands it to the engine would lose or tear
updates. Each engine has one :class:`EngineGate`, shared by the dataflows that run in it
(``import_trace``). The dataflow's run calls, its inputs' buffers and hand-offs and every
engine method (:class:`GatedEngine`) hold it, so a thread that feeds an input or reads a
capture while another thread runs the dataflow waits for that call to end; its updates are
then handed over whole.

User functions the engine calls run on engine threads while the run holds the gate: one that
called back into the engine running it would wait for ever, so it gets a ``ReentrancyError``
instead (:func:`callback_scope` marks those threads).

:func:`interrupts_deferred` holds back a Ctrl-C (``SIGINT``) while a buffer is handed to the
engine and cleared, raising it right after: the hand-off happens whole or not at all, so a
buffered batch is never pushed twice nor lost.
"""

from __future__ import annotations

# CPython's C module under ``signal``: its calls skip ``signal``'s enum conversions (a
# Ctrl-C deferral costs 1.4 us instead of 27, paid by every hand-off of single updates).
import _signal as _sig  # type: ignore[import-not-found,unused-ignore]
import _thread
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any

from ddflow.errors import ReentrancyError

__all__ = [
    "EngineGate",
    "GatedEngine",
    "callback_scope",
    "in_callback",
    "interrupts_deferred",
    "ungated",
]

_local = threading.local()
_MAIN_THREAD = threading.main_thread().ident
"""The thread that receives signals."""


@contextmanager
def callback_scope() -> Iterator[None]:
    """Marks the current thread as running a user function for an engine."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


def in_callback() -> bool:
    """Whether the current thread is running a user function for an engine."""
    return bool(getattr(_local, "depth", 0))


_BORROWED = ("Already borrowed", "Already mutably borrowed")


class EngineGate:
    """The lock every call into one engine holds, and the engine call running (if any)."""

    def __init__(self) -> None:
        """A free gate."""
        self.lock = threading.RLock()
        self.running: str | None = None
        """The run call in progress (``run_until(5)``, ...), while user functions may run."""

    def reentrancy(self) -> ReentrancyError:
        """The error for a user function calling back into the engine running it."""
        what = self.running or "a call"
        return ReentrancyError(
            f"this dataflow is running ({what}); a user function called by the engine cannot "
            f"feed, drive or read the dataflow that is running it. Record what you need and "
            f"act after {what} returns"
        )

    def check_idle(self) -> None:
        """Raises ``ReentrancyError`` in a user function called by this engine's run."""
        if self.running is not None and in_callback():
            raise self.reentrancy()

    def raise_if_borrowed(self, method: str, exc: RuntimeError) -> None:
        """Raises ``ReentrancyError`` for PyO3's bare "Already borrowed" from ``engine.method``
        (the engine entered twice by a call the gate does not know of); else returns."""
        if str(exc) in _BORROWED:
            raise ReentrancyError(
                f"engine.{method}: the engine is busy with another call "
                f"({self.running or 'from another thread'}); call it from the thread "
                "that drives the dataflow, or after the call returns"
            ) from exc

    def wait(self) -> None:
        """Takes the lock, waiting for another thread's call to end (a user function of the
        engine's own run gets ``ReentrancyError`` instead: it would wait for ever)."""
        if not self.lock.acquire(blocking=False):
            if in_callback():
                raise self.reentrancy()
            self.lock.acquire()
        if self.running is not None and in_callback():  # on the running thread (1 worker)
            self.lock.release()
            raise self.reentrancy()

    def __enter__(self) -> EngineGate:
        self.wait()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.lock.release()


class GatedEngine:
    """An engine (the native one, or a test's fake) whose every method holds the gate."""

    def __init__(self, engine: Any, gate: EngineGate) -> None:
        """Wraps ``engine``."""
        self._engine = engine
        self._gate = gate

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._engine, name)
        if not callable(attr):
            return attr
        gate = self._gate

        def gated(*args: Any, **kwargs: Any) -> Any:
            with gate:
                try:
                    return attr(*args, **kwargs)
                except RuntimeError as exc:
                    gate.raise_if_borrowed(name, exc)
                    raise

        # Kept: the next lookup finds it in the instance and skips this method (a bound
        # method of a native object is stable for the object's life).
        self.__dict__[name] = gated
        return gated

    def __repr__(self) -> str:
        return f"GatedEngine({self._engine!r})"


def ungated(engine: Any) -> Any:
    """The engine a :class:`GatedEngine` wraps (any other engine as is): for calls made with
    the gate already held, which need not take it again (about 1.5 us a call)."""
    return engine._engine if isinstance(engine, GatedEngine) else engine


class interrupts_deferred:  # noqa: N801 - used as a context manager, like a function
    """Holds back ``SIGINT`` (Ctrl-C) in the block, then raises it: the block runs whole.

    Only the main thread receives signals; elsewhere (and where ``SIGINT`` has no Python
    handler) the block runs as is. A class rather than a generator: the hand-off of a
    single update pays for it (about 2 us against 30 with the ``signal`` module's wrappers).
    """

    __slots__ = ("_caught", "_previous")

    def __init__(self) -> None:
        self._previous: Callable[[int, FrameType | None], Any] | None = None
        self._caught: list[tuple[int, FrameType | None]] = []

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        self._caught.append((signum, frame))

    def __enter__(self) -> None:
        if _thread.get_ident() != _MAIN_THREAD:
            return
        previous = _sig.getsignal(_sig.SIGINT)
        if callable(previous):
            self._previous = previous
            _sig.signal(_sig.SIGINT, self._hold)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        previous = self._previous
        if previous is None:
            return
        self._previous = None
        _sig.signal(_sig.SIGINT, previous)
        if self._caught:
            previous(*self._caught[0])
