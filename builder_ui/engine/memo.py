"""Values read from a run store, kept while the store is unchanged (`StoreMemo`).

The app's Compare tab makes its table of every run on each keystroke in the filter; with
1,000 runs, reading and flattening them is most of the keystroke's time, though nothing in
the store changed between two keys. `StoreMemo.get(key, make)` makes a value once and gives
it back while `RunStore.revision` (SQLite's `PRAGMA data_version`) is the same: any commit,
by any thread or process, makes it again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from builder_ui.engine.store import RunStore

T = TypeVar("T")

MEMO_SIZE = 8  # values kept (the least recently used goes first): a few filters' tables


class StoreMemo:
    """The last values made from `store`, each kept until the store changes.

    A value given back is shared by every caller (and thread): treat it as read-only.

    Args:
        store: The run store the values are read from.
        size: How many values to keep.
    """

    def __init__(self, store: RunStore, size: int = MEMO_SIZE):
        self.store = store
        self.size = size
        self._values: OrderedDict[Hashable, tuple[int, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`'s value, made again only when the store changed since it was made for `key`.

        The store's revision is read before `make` runs, so a change committed while it runs
        makes the next call read the store again: a value is never older than its revision.
        """
        revision = self.store.revision()
        if revision is None:  # no database yet, or a read-only one: nothing is kept
            return make()
        with self._lock:
            kept = self._values.get(key)
            if kept is not None and kept[0] == revision:
                self._values.move_to_end(key)
                return kept[1]
        value = make()
        with self._lock:
            self._values[key] = (revision, value)
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._values.clear()
