"""The Build tab's spec as the page's other tabs edit it (the Train tab's search form)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr


@dataclass(frozen=True)
class SpecEditor:
    """Where the session's spec is, and how an edit writes it.

    Attributes:
        code: The Build tab's editor: what the page shows (and what "Queue the spec" queues).
        spec: The session's spec text, which every edit reads when it runs.
        shown: What the editor and the problem lines show, drawn by one event of the Build tab
            (an edit never writes `code` itself: Gradio's page applies the results of
            different events in no fixed order).
        outputs: An edit's outputs, `[spec, shown]`.
        updates: The values of `outputs` for new spec text (checked).
        serial: The event options that apply a session's edits one at a time, in order.
    """

    code: gr.Code
    spec: gr.State
    shown: gr.State
    updates: Callable[[str], list[Any]]
    serial: dict[str, Any]

    @property
    def outputs(self) -> list[gr.components.Component]:
        return [self.spec, self.shown]
