"""Builders: the registry of task and model types, and `prepare(spec)`, a spec made trainable.

- `base`: `ModelBuilder` and `TaskBuilder`, what a type must provide.
- `registry`: registration by type name, entry-point plugins, lookups.
- `loading`: `load_spec` / `validate_spec` with the registered types, `check_kinds`.
- `sweeps`: a sweep's trials, each validated.
- `prepared`: `prepare(spec)` → `Prepared` (data splits, `build()`, `evaluate()`), with
  Keras imported at its top: `prepare`, `Prepared`, `load_task` and `make_optimizer` are
  re-exported here and imported on first use (PEP 562), so that this package loads without it.
- `presets`: the starting points of the arc, packaged YAML specs.
- The built-in types, one module per family: `tasks` (every task type, and
  `data_files` for the user's CSV files), `sequence` (`sequence_classifier`,
  `sequence_regressor`), `vision` (`vision_transformer`), `show_attend_tell`
  (`show_attend_tell`), `pointer`
  (`pointer_network`), `seq2seq` (`seq2seq`), `graph` (`graph`: blocks wired
  on the canvas; `graph_params` its fields, `graph_structure` their wiring,
  `graph_blocks` its catalog). Importing this package registers them, without Keras.
- The Keras side, with Keras imported at the top: `graph_model` (every built-in type's
  checks, estimate and model, and the canvas's `graph_report`), over `graph_shapes` (the
  walk), `graph_fit` (one training step, traced), `graph_kernels`, `graph_decoder`, and
  `graph_import` (a `.keras` file as a graph). The builders load it at a model's first
  check, estimate or build: a spec loads, and a process picks its Keras backend, first.
  How the encoder–decoders train and are scored: `translating`, `captioning`,
  `pointing`.
- `short_forms`: every named model type but `graph` written out as graph nodes,
  the one description of their layers, which their builders build through the
  graph's walk; `fields` the field types every model type shares.
- `spatiotemporal`, built in too: `conv_lstm`, the next frames of a video
  (Shi et al. 2015), or with `layout: flat` the frame-flattening LSTM of equal size.
"""

import importlib
from typing import Any

from builder_ui.builders import (
    graph,
    pointer,
    seq2seq,
    sequence,
    show_attend_tell,
    spatiotemporal,
    tasks,
    vision,
)
from builder_ui.builders.base import (
    INPUT_KINDS,
    TARGET_KINDS,
    BuilderError,
    ModelBuilder,
    TaskBuilder,
)
from builder_ui.builders.loading import (
    check_kinds,
    json_schema,
    load_spec,
    resolve_component,
    validate_spec,
)
from builder_ui.builders.registry import (
    ENTRY_POINT_GROUP,
    describe_tasks,
    describe_types,
    load_entry_point,
    model_builder,
    model_builders,
    model_types,
    params_model,
    plugin_errors,
    register_model,
    register_task,
    reload_plugins,
    task_builder,
    task_types,
    unregister,
)
from builder_ui.builders.sweeps import Trial, expand, trials

# Re-exported from `prepared`, which imports Keras: loaded on first use (PEP 562), after the
# process has loaded its spec and chosen its Keras backend.
_PREPARED = ("Prepared", "load_task", "make_optimizer", "prepare")


def __getattr__(name: str) -> Any:
    if name not in _PREPARED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.prepared"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_PREPARED})


# The built-in type modules, registered above (their types are not plugins).
BUILTIN_MODULES = tuple(
    module.__name__
    for module in (
        tasks,
        sequence,
        vision,
        show_attend_tell,
        pointer,
        seq2seq,
        graph,
        spatiotemporal,
    )
)

__all__ = [
    "BUILTIN_MODULES",
    "ENTRY_POINT_GROUP",
    "INPUT_KINDS",
    "TARGET_KINDS",
    "BuilderError",
    "ModelBuilder",
    "Prepared",
    "TaskBuilder",
    "Trial",
    "check_kinds",
    "describe_tasks",
    "describe_types",
    "expand",
    "json_schema",
    "load_entry_point",
    "load_spec",
    "load_task",
    "make_optimizer",
    "model_builder",
    "model_builders",
    "model_types",
    "params_model",
    "plugin_errors",
    "prepare",
    "register_model",
    "register_task",
    "reload_plugins",
    "resolve_component",
    "task_builder",
    "task_types",
    "trials",
    "unregister",
    "validate_spec",
]
