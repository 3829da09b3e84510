"""The Build tab's graph canvas: plain JavaScript and CSS for a `gr.HTML`, shipped with the package.

`graph_canvas.js` (run as the component's `js_on_load`) draws the palette, the
blocks, their ports and the edges in SVG and edits them with pointer events
and the keyboard; `graph_canvas.css` styles it. Both are vendored here, read
with `importlib.resources`, with no build step and nothing fetched at run time.

The component's value is JSON: `{"nodes": [...], "report": {...}, "catalog":
[...], "revision": n, "origin": "spec" | "canvas"}`. Python fills the report
and the catalog (`builder_ui.app.actions.canvas`); the canvas sends back its
nodes and revision with the custom event `EDIT_EVENT`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

EDIT_EVENT = "graph_edit"  # the event the canvas triggers, named in graph_canvas.js
# The component's own markup: the script fills it in. Static, so a new value never redraws it.
HTML_TEMPLATE = '<div class="ksg-root" data-ready="false"></div>'


@cache
def _read(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def html_kwargs() -> dict[str, Any]:
    """The `gr.HTML` arguments that make it the canvas: template, CSS and script."""
    return {
        "html_template": HTML_TEMPLATE,
        "css_template": _read("graph_canvas.css"),
        "js_on_load": _read("graph_canvas.js"),
        "apply_default_css": False,
    }
