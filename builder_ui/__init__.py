"""builder_ui: the experiment engine and Gradio app for keras_seq, in layers.

    specs ─▶ builders ─▶ engine ─▶ results, lab ─▶ app ─▶ cli

- `specs`: the spec language (pydantic models, versions, YAML/JSON, errors, schema, sweep space);
- `builders`: the registry of task and model types, plugins, `load_spec`, `prepare(spec)`, presets;
- `engine`: `engine.run` (train and record), `RunStore`, the training queue, workers, sweeps;
- `results`: comparing runs, exporting models, inspecting them;
- `lab`: the bottleneck lab's experiments and report;
- `app`: the Gradio page, its tabs and the plain-Python actions they call;
- `cli`: the `keras-seq` command.

Under them all, `files` writes files whole or not at all (a temporary name, then a rename),
and `extras` says which extra installs a missing optional package (`pip install
"keras-seq[ray]"`). Each layer imports only the layers before it
(`tests/builder_ui/test_layering.py` reads the imports and keeps it so);
`docs/architecture.md` follows one spec through them. Importing this package is
cheap: Gradio, Keras and the backends are only imported by the modules that need them,
when they are used.
"""

__all__: list[str] = []
