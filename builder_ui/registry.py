"""Deprecated alias of `builder_ui.builders` (the registry, plugins and `prepare`).

Kept for one release (removed in 0.2): import `ModelBuilder`, `register_model`,
`prepare` and the rest from `builder_ui.builders`.
"""

import warnings

from builder_ui.builders import *  # noqa: F403
from builder_ui.builders import __all__  # noqa: F401

warnings.warn(
    "builder_ui.registry is deprecated: import from builder_ui.builders",
    DeprecationWarning,
    stacklevel=2,
)
