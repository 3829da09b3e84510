"""The Gradio app. For now a placeholder page listing what keras_seq offers.

The model builder (train, compare, export) will replace the placeholder; the
catalogue itself comes from `builder_ui.catalog`, so this module stays thin.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import gradio as gr

from builder_ui import catalog

TITLE = "keras_seq builder"
MAX_FILE_SIZE = "10mb"


def _table(entries: tuple[catalog.CatalogEntry, ...], label: str, empty: str) -> None:
    """Render catalogue entries as a read-only table, or a note if there are none."""
    if entries:
        gr.Dataframe(
            value=catalog.rows(entries),
            headers=list(catalog.HEADERS),
            label=label,
            interactive=False,
            wrap=True,
        )
    else:
        gr.Markdown(f"**{label}:** {empty}")


def build_app(runs_dir: str | Path) -> gr.Blocks:
    """Build the app page: title, what is coming, and the current layer and task catalogue."""
    found = catalog.build_catalog()
    with gr.Blocks(title=TITLE, analytics_enabled=False) as app:
        gr.Markdown(f"# {TITLE}")
        gr.Markdown(
            "The model builder (train, compare and export sequence models) is coming. "
            "Until then, this page lists what `keras_seq` offers now. "
            f"Runs will be kept in `{Path(runs_dir)}`."
        )
        gr.Markdown("## Layers (`keras_seq.layers`)")
        _table(found.layers, "Layers", "no layers are exported yet.")
        gr.Markdown("## Tasks (`keras_seq.tasks`)")
        _table(found.tasks, "Tasks", "no tasks are available yet.")
    return app


def launch(host: str, port: int, runs_dir: str | Path, auth: tuple[str, str] | None = None) -> None:
    """Serve the app on `host:port` (never through a public share link); block until stopped.

    Ctrl+C or SIGTERM closes the server and returns.
    """
    app = build_app(runs_dir)
    _, local_url, _ = app.launch(
        server_name=host,
        server_port=port,
        share=False,
        auth=auth,
        show_error=True,
        max_file_size=MAX_FILE_SIZE,
        ssr_mode=False,
        mcp_server=False,
        enable_monitoring=False,
        run_history=False,
        quiet=True,
        prevent_thread_lock=True,
    )
    print(f"{TITLE} running on {local_url} (Ctrl+C to stop)", flush=True)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    app.block_thread()


def _interrupt(signum: int, frame: object) -> None:
    """Turn SIGTERM into KeyboardInterrupt so that the server shuts down cleanly."""
    raise KeyboardInterrupt
