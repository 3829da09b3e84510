"""The builder app: a Gradio page over the engine, its tabs, and the plain-Python actions they call.

- `page`: `build_app(runs_dir)`, `start(...)`, `launch(...)`; lays out the tabs and wires them.
- `tabs/`: one module per tab (Build, Train, Compare, Inspect, Export, Lab, About).
- `actions/`: what the tabs' buttons do, as plain Python (no Gradio), tested without a browser.
- `context`: `AppContext`, the store, queue, uploads and loaded models the actions share.
- `forms`: the Build tab's form fields, from the registered builders' params models.
- `uploads`: the user's files, checked, size-capped and kept for runs.

Importing this package does not import Gradio; `page` and `tabs` do.
"""
