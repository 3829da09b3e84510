"""Small models around keras_seq layers, built from a task's description.

`recurrent_model(layer, task.inputs, task.targets)` puts one recurrent layer
between the task's input and a classification or regression head;
`compile_for(model, task.targets)` picks the loss and metric.

`pointer_network(input_features)` builds a `PointerNetwork` (Vinyals et al.
2015), whose outputs are positions of its input, for tasks such as
`sort_numbers`; `decode` is its greedy inference loop.

`transformer_classifier(vocab_size, max_length, num_classes)` classifies token
sequences with a Transformer encoder (Vaswani et al. 2017), pooling by a
masked mean or a class token; `vision_transformer(image_shape, patch_size, …)`
is the ViT of Dosovitskiy et al. (2020), for image tasks such as `digits`.
"""

from keras_seq.models.pointer import PointerNetwork, pointer_network
from keras_seq.models.recurrent import compile_for, recurrent_model
from keras_seq.models.transformer import (
    ClassTokenPooling,
    MaskedMeanPooling,
    transformer_classifier,
    vision_transformer,
)

__all__ = [
    "ClassTokenPooling",
    "MaskedMeanPooling",
    "PointerNetwork",
    "compile_for",
    "pointer_network",
    "recurrent_model",
    "transformer_classifier",
    "vision_transformer",
]
