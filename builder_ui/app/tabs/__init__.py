"""The app's tabs, one module per tab: layout and event wiring only.

Each `*_tab(ctx, ...)` function lays out its tab inside the page's `gr.Tabs`
and wires its events to `builder_ui.app.actions`. A tab that needs another's
component (the Train tab reads the Build tab's spec editor) gets it as an
argument from `builder_ui.app.page`, which wires them; tabs do not import
each other.
"""
