"""Deprecated alias of `builder_ui.results.compare` (the results table of many runs).

Kept for one release (removed in 0.2): import from `builder_ui.results.compare`.
"""

import warnings

from builder_ui.results.compare import *  # noqa: F403

warnings.warn(
    "builder_ui.compare is deprecated: import from builder_ui.results.compare",
    DeprecationWarning,
    stacklevel=2,
)
