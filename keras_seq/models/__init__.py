"""Small models around keras_seq layers, built from a task's description.

`recurrent_model(layer, task.inputs, task.targets)` puts one recurrent layer
between the task's input and a classification or regression head;
`compile_for(model, task.targets)` picks the loss and metric.
"""

from keras_seq.models.recurrent import compile_for, recurrent_model

__all__ = ["compile_for", "recurrent_model"]
