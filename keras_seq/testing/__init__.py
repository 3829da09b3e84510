"""Checks every keras_seq layer must pass; plugin authors can run them on theirs.

`check_layer` runs, for a layer and a model containing it: the config round
trip, a `.keras` file reloaded with `safe_mode=True` in a fresh process, a
TensorFlow SavedModel reloaded in a fresh process that never imports
keras_seq (nor Keras), the `mixed_float16` policy, masking, and one `fit`
step with `jit_compile=True`. `check_saved_layers` checks the saved files of many
layers in one fresh process.
"""

from keras_seq.testing.layer_checks import LayerCase, LayerInput, check_layer, check_saved_layers

__all__ = ["LayerCase", "LayerInput", "check_layer", "check_saved_layers"]
