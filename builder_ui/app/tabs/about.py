"""The About tab: what keras_seq is, and the layers and tasks it offers right now.

Layout and wiring only: the catalogue is `builder_ui.app.actions.catalog`.
"""

from __future__ import annotations

import gradio as gr

from builder_ui.app.actions import catalog


def about_tab(tab: gr.Tab) -> None:
    """Lay out the About tab: what keras_seq is and its catalogue of layers and tasks."""
    gr.Markdown(
        "**keras_seq**: Keras 3 layers for the whole arc of sequence models, from the vanilla "
        "RNN and the 1997 LSTM to seq2seq, attention, the Transformer and the ViT. Pick a "
        "preset in **Build**, queue it in **Train**, compare runs in **Compare**, look inside "
        "a model in **Inspect** and download it in **Export**."
    )
    gr.Markdown("### Layers (`keras_seq.layers`) and tasks (`keras_seq.tasks`)")
    table = gr.Dataframe(
        headers=["Name", "Kind", "Description"],
        interactive=False,
        wrap=True,
        elem_id="catalogue",
    )

    def load() -> dict:
        # Listing the layers imports Keras: done when the tab is opened, not at start-up.
        found = catalog.build_catalog()
        rows = catalog.rows(found.layers) + catalog.rows(found.tasks)
        return {"headers": list(catalog.HEADERS), "data": rows}

    tab.select(load, outputs=[table], api_name="catalogue")
