"""The built-in model builders, one module per family of model types.

- `sequence`: `sequence_classifier` and `sequence_regressor`, a recurrent or
  Transformer encoder over tokens or numeric features.
- `vision`: `vision_transformer`, the ViT over images.
- `pointer`: `pointer_network`, outputs that point at input positions.
- `seq2seq`: `seq2seq`, an RNN (with or without attention) or Transformer
  encoder–decoder from source to target token ids.

Importing a module registers its types (`builder_ui.registry` does it on
first use); each imports Keras only when it builds a model.
"""
