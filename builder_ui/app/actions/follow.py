"""What each open Train tab follows, kept on the server so that its stream can push updates.

Each page load opens one long-lived stream (an async generator in
`builder_ui.app.tabs.train`) that sends the page what changed: the queue
table, the "Follow run" choices, the progress line, the learning curves and
the store's version. It needs what the page shows now, which a generator's
inputs (read once, when it starts) cannot tell it, so the page's choices live
here, under Gradio's session hash: the run in "Follow run", whether "Follow the
newest run" is ticked, the runs the page queued and what it has drawn. The
tab's handlers write them; the stream reads them.

A `Snapshot` is everything the stream could send; `Snapshot.news` names the
parts the page has not got yet (the view remembers a hash of each part sent),
so a refresh that finds nothing new sends nothing, and one that finds a new
batch sends the progress line alone (not the "Follow run" menu, which would
close under the user's pointer).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from builder_ui.app.actions.train import (
    curves_key,
    followed_run,
    progress_html,
    queue_choices,
    queue_frame,
    training_now,
)
from builder_ui.app.context import AppContext

# Pages remembered at once; the oldest is forgotten first (a page whose stream ended
# without saying so, a closed tab, is the one that goes).
MAX_VIEWS = 256


@dataclass
class TrainView:
    """What one page's Train tab shows and was told.

    Attributes:
        run_id: The run in "Follow run" (None: none yet).
        newest: Whether "Follow the newest run" is ticked.
        auto_run: The run the tab put in "Follow run" itself; another value
            there was chosen by hand (pinned).
        mine: The runs this page queued, oldest first.
        sent: A hash of each `Snapshot` part the page got last, by part.
    """

    run_id: str | None = None
    newest: bool = True
    auto_run: str = ""
    mine: list[str] = field(default_factory=list)
    sent: dict[str, str] = field(default_factory=dict)
    # Held by whoever reads or changes the view: the page's handlers and its stream.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def follows(self, ctx: AppContext) -> str | None:
        """The run to show: the newest that trains, unless one was chosen by hand."""
        if not self.run_id or (self.newest and self.run_id == self.auto_run):
            run_id = followed_run(ctx, self.mine)
            if self.newest:
                self.auto_run = run_id or ""
            self.run_id = run_id
        return self.run_id


class TrainViews:
    """Every open page's `TrainView`, by session hash (thread-safe, at most `MAX_VIEWS`)."""

    def __init__(self, limit: int = MAX_VIEWS) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._views: OrderedDict[str, TrainView] = OrderedDict()

    def of(self, session: str | None) -> TrainView:
        """The page's view, made on first use (a page with no session gets a fresh one)."""
        if session is None:
            return TrainView()
        with self._lock:
            view = self._views.get(session)
            if view is None:
                view = self._views[session] = TrainView()
                while len(self._views) > self._limit:
                    self._views.popitem(last=False)
            else:
                self._views.move_to_end(session)
            return view

    def forget(self, session: str | None) -> None:
        """Drop a page's view (its stream ended: the page was closed or reloaded)."""
        with self._lock:
            self._views.pop(session, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._views)


@dataclass
class Snapshot:
    """What a Train tab would show now.

    Attributes:
        run_id: The followed run (None: nothing queued or training anywhere).
        table: The queue table (a DataFrame).
        progress: The followed run's progress line (HTML).
        curves: The `curves_key` of the followed run's curves.
        choices: The "Follow run" choices, `(label, run id)`.
        busy: Whether something waits or trains (then the page is refreshed often).
        store_version: Runs and finished runs counted (the Compare tab watches it).
    """

    PARTS = ("table", "progress", "curves", "follow", "store_version")

    run_id: str | None
    table: Any
    progress: str
    curves: str
    choices: list[tuple[str, str]]
    busy: bool
    store_version: str

    def part(self, name: str) -> Any:
        """The value of one part, as the page gets it."""
        if name == "follow":
            return (self.choices, self.run_id)
        return getattr(self, name)

    def news(self, view: TrainView, parts: Iterable[str] = PARTS) -> set[str]:
        """Which of `parts` `view`'s page has not got; they are recorded as sent."""
        new = set()
        with view.lock:
            for name in parts:
                digest = _hash(self.part(name))
                if view.sent.get(name) != digest:
                    view.sent[name] = digest
                    new.add(name)
        return new


def _hash(value: Any) -> str:
    text = value.to_json() if hasattr(value, "to_json") else repr(value)  # a DataFrame
    return hashlib.sha1(text.encode()).hexdigest()


def store_version(ctx: AppContext) -> str:
    """Runs and finished runs counted: it changes when a run is added, ends or is deleted."""
    total, finished = ctx.store.run_counts()
    return f"{total}:{finished}"


def snapshot(ctx: AppContext, view: TrainView) -> Snapshot:
    """What the page of `view` would show now (it moves `view` on to the newest run if due)."""
    with view.lock:
        run_id = view.follows(ctx)
    return Snapshot(
        run_id=run_id,
        table=queue_frame(ctx),
        progress=progress_html(ctx, run_id),
        curves=curves_key(ctx, run_id),
        choices=queue_choices(ctx),
        busy=training_now(ctx),
        store_version=store_version(ctx),
    )
