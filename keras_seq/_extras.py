"""What a missing optional package says: one line that names the extra to install.

The base install (`pip install keras-seq`) is what the layers, losses, metrics and tasks
need. A few functions use packages of the `app` extra (pandas for their tables, matplotlib
for their figures, scikit-learn for the digits data set); they import them through
`import_extra`, which turns a missing one into one line, e.g.
`keras_seq.metrics.evaluate_by_length needs pandas: pip install "keras-seq[app]"`.

builder_ui's messages for its extras (`app`, `search`, `ray`, `export`, `jax`, `torch`,
`tensorboard`) are made here too, by `missing_extra`, through `builder_ui.extras`.

This module imports the standard library only: `builder_ui.extras` loads it without
keras_seq/__init__.py, which imports Keras.
"""

from __future__ import annotations

import importlib
from types import ModuleType

DISTRIBUTION = "keras-seq"  # the name pip installs it by

# The import names of the `app` extra's packages (pyproject.toml), and of the two that come
# with pydantic and builder_ui imports too (pydantic_core, annotated_types).
APP_MODULES = frozenset(
    {
        "annotated_types",
        "gradio",
        "matplotlib",
        "pandas",
        "plotly",
        "pydantic",
        "pydantic_core",
        "scipy",
        "sklearn",
        "starlette",
        "yaml",
    }
)


def missing_extra(what: str, extra: str) -> str:
    """The one line for a missing extra: `WHAT: pip install "keras-seq[EXTRA]"`.

    Args:
        what: What needs the extra's packages, e.g. `"keras-seq train needs the builder's
            packages"`.
        extra: The extra of pyproject.toml that installs them, e.g. `"app"`.
    """
    return f'{what}: pip install "{DISTRIBUTION}[{extra}]"'


def import_extra(module: str, extra: str, user: str, package: str | None = None) -> ModuleType:
    """Import `module`, an optional dependency, or say which extra installs it.

    Args:
        module: The module to import, e.g. `"pandas"` or `"matplotlib.figure"`.
        extra: The extra of pyproject.toml that installs it, e.g. `"app"`.
        user: What needs it (a function, an option), named in the message.
        package: The package's name in the message; default: `module`'s top level.

    Returns:
        The module.

    Raises:
        ModuleNotFoundError: `module` is not installed; the message is one line,
            `USER needs PACKAGE: pip install "keras-seq[EXTRA]"`, and `name` is the
            missing module's, as Python's own. A module missing inside an installed
            `module` is raised as it is.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        top = module.split(".")[0]
        if error.name is None or error.name.split(".")[0] != top:
            raise  # `module` is there, something it imports is not: not the extra's to say
        needed = package or top
        raise ModuleNotFoundError(
            missing_extra(f"{user} needs {needed}", extra), name=error.name
        ) from None
