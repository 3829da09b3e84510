"""The spec language: what to train, on what and how, as validated data (no Keras, no registry).

- `experiment`: the pydantic models (`ExperimentSpec`, `TrainSpec`, `SweepSpec`, and
  `TaskParams`/`ModelParams`, the bases of every builder's fields).
- `versions`: `SPEC_VERSION` and the upgrades of older documents.
- `documents`: YAML/JSON text and files to plain data, and specs back to text.
- `validation`: a document validated in two steps, with the component types
  resolved by the caller (the builders' registry).
- `errors`: `SpecError`, every problem with its field path, one per line.
- `schema`: the JSON Schema of a spec over given component types.
- `sweep_space`: the sweep space, one document per trial.

A spec that names task and model types is loaded with `builder_ui.builders.load_spec`,
which brings the registry; this package knows nothing of which types exist.
"""

from builder_ui.specs.documents import (
    MAX_SPEC_BYTES,
    SPEC_SUFFIXES,
    dump_spec,
    parse_json,
    parse_yaml,
    read_document,
    read_spec_file,
)
from builder_ui.specs.errors import SpecError, problems_from, shown
from builder_ui.specs.experiment import (
    MAX_BATCH_SIZE,
    MAX_EPOCHS,
    MAX_SEED,
    MAX_SWEEP_TRIALS,
    NAME_PATTERN,
    OPTIMIZERS,
    PRECISIONS,
    EarlyStoppingSpec,
    ExperimentSpec,
    ModelParams,
    ParameterRange,
    StrictModel,
    SweepSpec,
    TaskParams,
    TrainSpec,
    TypeShorthand,
    is_finite_number,
    section_by_type,
)
from builder_ui.specs.sweep_space import grid_size, sweep_id
from builder_ui.specs.versions import SPEC_VERSION, UPGRADES, upgrade

__all__ = [
    "MAX_BATCH_SIZE",
    "MAX_EPOCHS",
    "MAX_SEED",
    "MAX_SPEC_BYTES",
    "MAX_SWEEP_TRIALS",
    "NAME_PATTERN",
    "OPTIMIZERS",
    "PRECISIONS",
    "SPEC_SUFFIXES",
    "SPEC_VERSION",
    "UPGRADES",
    "EarlyStoppingSpec",
    "ExperimentSpec",
    "ModelParams",
    "ParameterRange",
    "SpecError",
    "StrictModel",
    "SweepSpec",
    "TaskParams",
    "TrainSpec",
    "TypeShorthand",
    "dump_spec",
    "grid_size",
    "is_finite_number",
    "parse_json",
    "parse_yaml",
    "problems_from",
    "read_document",
    "read_spec_file",
    "section_by_type",
    "shown",
    "sweep_id",
    "upgrade",
]
