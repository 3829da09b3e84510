"""Deprecated alias of `builder_ui.specs` (the spec language) and `builder_ui.builders.load_spec`.

Kept for one release (removed in 0.2): import from `builder_ui.specs`, and
`load_spec` / `validate_spec` / `json_schema` from `builder_ui.builders`.
"""

import warnings

from builder_ui.builders import json_schema, load_spec, validate_spec
from builder_ui.specs import *  # noqa: F403
from builder_ui.specs import __all__ as _specs_all

__all__ = [*_specs_all, "json_schema", "load_spec", "validate_spec"]

warnings.warn(
    "builder_ui.spec is deprecated: import the spec language from builder_ui.specs and "
    "load_spec from builder_ui.builders",
    DeprecationWarning,
    stacklevel=2,
)
