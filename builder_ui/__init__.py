"""builder_ui: the experiment engine and Gradio app for keras_seq.

The app lets you build, train, compare and export sequence models made of
`keras_seq` layers. Start it with ``keras-seq ui`` (see `builder_ui.cli`).

Importing this package is cheap: Gradio, Keras and the backends are only
imported by the modules that need them, when they are used.
"""

__all__: list[str] = []
