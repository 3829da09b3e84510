"""The Build tab's graph canvas: Svelte Flow, built into one script that ships with the package.

`static/graph_canvas.js` is built from `frontend/` (Svelte 5 and `@xyflow/svelte`, with
dagre for "Tidy", js-yaml for copy and paste, html-to-image for SVG and PNG export) by
`make canvas`, over `frontend/package-lock.json`; it is committed, so neither `make app`
nor a wheel needs Node. It runs as a `gr.HTML` component's `js_on_load`, styles included,
with nothing fetched at run time. The logic under `frontend/src/logic/` (the graph model,
undo, port checks, layout, clipboard, the answer protocol) has unit tests run by
`make test` (`node --test`).

The component's value is JSON: `{"nodes": [...], "groups": [...], "report": {...},
"source": "...", "revision": n, "origin": "spec" | "canvas" | "unreadable"}`. Python fills
the report (`builder_ui.app.actions.canvas`); the canvas sends back its nodes, groups and
revision with the custom event `EDIT_EVENT` (see `frontend/src/logic/sync.js`). The block
catalog goes in once, with the script.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

EDIT_EVENT = "graph_edit"  # the event the canvas triggers, named in `_START`
# The component's own markup: the script fills it in. Static, so a new value never redraws it.
HTML_TEMPLATE = '<div class="ksg-root" data-ready="false"></div>'
_START = (
    "\nKerasSeqCanvas.start({ element, props, trigger, watch, catalog: %s });"
    ' // trigger("graph_edit")\n'
)


@cache
def _bundle() -> str:
    return resources.files(__package__).joinpath("static", "graph_canvas.js").read_text("utf-8")


def html_kwargs(catalog: list[dict[str, Any]]) -> dict[str, Any]:
    """The `gr.HTML` arguments that make it the canvas: its template and its script, which
    starts it with the block `catalog` (JSON is a JavaScript expression)."""
    return {
        "html_template": HTML_TEMPLATE,
        "css_template": "",
        "js_on_load": _bundle() + _START % json.dumps(catalog, ensure_ascii=True),
        "apply_default_css": False,
    }
