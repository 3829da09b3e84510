"""What a missing optional package says, for builder_ui: keras_seq's one helper, loaded alone.

`keras_seq._extras` makes the one line a missing extra says, e.g.
`The 'ray' executor needs Ray: pip install "keras-seq[ray]"`. `import keras_seq._extras`
would first run keras_seq/__init__.py, which imports every layer (Keras and TensorFlow:
seconds), so this module loads that one file (standard library only) by itself: `keras-seq
--help`, the message of a missing extra and the app's start stay quick.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from types import ModuleType

NAME = "keras_seq._extras"


def _keras_seq_extras() -> ModuleType:
    """keras_seq/_extras.py, without running keras_seq/__init__.py."""
    if NAME in sys.modules:  # keras_seq is imported already
        return sys.modules[NAME]
    package = importlib.util.find_spec("keras_seq")  # finds the package, runs none of it
    locations = package.submodule_search_locations if package is not None else None
    spec = importlib.machinery.PathFinder.find_spec(NAME, locations)
    if spec is None or spec.loader is None:
        raise ImportError(f"keras_seq is not installed with its {NAME} here", name=NAME)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_extras = _keras_seq_extras()
APP_MODULES: frozenset[str] = _extras.APP_MODULES
DISTRIBUTION: str = _extras.DISTRIBUTION
import_extra = _extras.import_extra
missing_extra = _extras.missing_extra

__all__ = ["APP_MODULES", "DISTRIBUTION", "import_extra", "missing_extra"]
