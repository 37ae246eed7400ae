"""A background thread that runs an iterator a few items ahead of its consumer: the input readers
(dpsketch._input, reading and decoding overlap the consumer's update) and the wall-clock windows
(dpsketch.windows, which wait for a batch only until the next deadline)."""

from __future__ import annotations

import queue
import threading
from typing import Any, Iterator, Optional


class Prefetch:
    """Runs ``items`` in a daemon thread, at most ``depth`` items ahead. :meth:`get` returns the
    next item, :data:`DONE` at the end, or raises what the iterator raised (in order); memory grows
    by ``depth`` items. :meth:`close` stops the thread: it also sees ``stop`` set between items."""

    DONE: Any = object()

    def __init__(self, items: Iterator[Any], *, depth: int = 2, stop: Optional[threading.Event] = None,
                 name: str = "dpsketch-reader") -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self.stop = threading.Event() if stop is None else stop
        self._items = items
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _put(self, entry) -> bool:
        while not self.stop.is_set():
            try:
                self._queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for item in self._items:
                if not self._put((True, item)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            self._put((False, exc))
            return
        finally:
            close = getattr(self._items, "close", None)
            if self.stop.is_set() and close is not None:
                close()
        self._put((True, self.DONE))

    def get(self, timeout: Optional[float] = None) -> Any:
        """The next item (:data:`DONE` at the end); queue.Empty when ``timeout`` passes first."""
        ok, item = self._queue.get(timeout=timeout)
        if not ok:
            raise item
        return item

    def close(self, *, wait: bool = True) -> None:
        """Stop the thread; with ``wait``, until it has ended (a reader blocked on a pipe that
        never delivers would keep the caller waiting: the windows' wall clock does not wait)."""
        self.stop.set()
        if wait:
            self._thread.join()
