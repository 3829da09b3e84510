"""Deprecated alias of `builder_ui.engine.store` (`RunStore`, the SQLite run store).

Kept for one release (removed in 0.2): import from `builder_ui.engine`
(`RunStore`, `RunRecord`, ...) or `builder_ui.engine.store`.
"""

import warnings

from builder_ui.engine.store import *  # noqa: F403

warnings.warn(
    "builder_ui.runs is deprecated: import RunStore from builder_ui.engine",
    DeprecationWarning,
    stacklevel=2,
)
