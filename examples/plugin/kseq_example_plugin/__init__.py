"""An example keras_seq plugin: a task type and a model type, registered by entry points.

`builders` holds both; `pyproject.toml` names them in the group `keras_seq.builders`, so
builder_ui finds them when this package is installed, validates specs that use them, trains
them and shows them in the app like the built-in types.
"""

from kseq_example_plugin.builders import ConvClassifier, SineFrequency

__all__ = ["ConvClassifier", "SineFrequency"]
