"""Transformer models built from keras_seq's blocks: a sequence classifier and the ViT.

    tokens ─▶ Embedding ─▶ [class token] ─▶ + positions ─▶ N × encoder block
           ─▶ mean over real steps | class token ─▶ classifier

    image ─▶ patches ─▶ class token ─▶ + learned positions ─▶ N × pre-LN block
          ─▶ LayerNorm ─▶ class token ─▶ classifier

Both models are plain functional `keras.Model`s of registered layers (no
`Lambda`), so they save to `.keras` files that reload with `safe_mode=True`
once `keras_seq` is imported. The classifier head is a softmax, as in
`recurrent_model`, so `compile_for(model, task.targets)` compiles both.
"""

from __future__ import annotations

import numbers

import keras

from keras_seq import argument_checks
from keras_seq.layers import (
    ClassToken,
    ClassTokenPooling,
    LearnedPositionalEmbedding,
    MaskedMeanPooling,
    PatchEmbedding,
    SinusoidalPositionalEncoding,
    TransformerEncoderBlock,
)
from keras_seq.tasks.base import ImageSpec

POOLINGS = ("mean", "class_token")
POSITIONS = ("sinusoidal", "learned")

# ViT's initialisation of its position table (Dosovitskiy et al. 2020, in their code).
_POSITION_STDDEV = 0.02


def transformer_classifier(
    vocab_size,
    max_length,
    num_classes,
    *,
    embedding_dim=64,
    num_layers=2,
    num_heads=4,
    ff_dim=128,
    pooling="mean",
    positions="sinusoidal",
    norm_first=False,
    dropout=0.0,
    mask_zero=True,
    name="transformer_classifier",
):
    """A Transformer encoder that classifies token sequences.

    Token ids go through `Embedding(vocab_size, embedding_dim, mask_zero=True)`
    (id 0 is padding and is masked everywhere after; `mask_zero=False` when
    0 is a token like any other), get their positions
    added, pass `num_layers` `TransformerEncoderBlock`s (Vaswani et al. 2017) and
    are pooled into one vector, which a softmax layer classifies:

    - `pooling="mean"`: the mean over the real (unmasked) steps
      (`MaskedMeanPooling`: a sequence of padding only gives zeros, not NaN).
    - `pooling="class_token"`: a learned token is put before the sequence
      (BERT's `[CLS]`) and its final state is classified. It is never masked.

    With `norm_first=True` (pre-LN) a `LayerNormalization` follows the last
    block, as in ViT and the Annotated Transformer. Unlike the paper, the
    embeddings are not multiplied by `√d_model`.

    Args:
        vocab_size: Number of token ids, padding (id 0) included.
        max_length: Tokens per sequence; the model's input is
            `(batch, max_length)` int32, padded with 0.
        num_classes: Number of classes, at least 2.
        embedding_dim: `d_model`, the width of every token vector. Default 64.
        num_layers: Number of encoder blocks. Default 2.
        num_heads: Attention heads per block; must divide `embedding_dim`.
            Default 4.
        ff_dim: Inner size of each block's feed-forward network. Default 128.
        pooling: `"mean"` (default) or `"class_token"`.
        positions: `"sinusoidal"` (default, the paper's fixed encoding) or
            `"learned"` (a trained table, BERT and ViT).
        norm_first: False (default) for the paper's post-LN blocks, True for
            pre-LN.
        dropout: Dropout rate after the positions and inside every block (the
            paper's residual dropout). Default 0.
        mask_zero: True (default) when id 0 is padding: left out of every
            block's attention and of the mean. False when the sequences have no
            padding and 0 is a token like the others.
        name: Name of the model.

    Returns:
        An uncompiled functional `keras.Model` from `(batch, max_length)`
        int32 ids to `(batch, num_classes)` class probabilities. Its layers:
        `token_embedding`, (`class_token`), `position_encoding` or
        `position_embedding`, `embedding_dropout`, `encoder_block_0` …,
        (`encoder_layer_norm`), `mean_pooling` or `class_token_pooling`,
        `classifier`.

    Example:

    >>> model = transformer_classifier(vocab_size=100, max_length=20, num_classes=3)
    >>> model.output_shape
    (None, 3)

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
        - Devlin et al., "BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding", NAACL 2019.
    """
    vocab_size = argument_checks.int_in_range(
        "vocab_size", vocab_size, 2, argument_checks.MAX_LAYER_PARAMS
    )
    max_length = argument_checks.positive_int(
        "max_length", max_length, argument_checks.MAX_LAYER_PARAMS
    )
    num_classes = argument_checks.int_in_range(
        "num_classes", num_classes, 2, argument_checks.MAX_UNITS
    )
    embedding_dim, num_layers, num_heads, ff_dim = _check_stack(
        embedding_dim, num_layers, num_heads, ff_dim
    )
    pooling = argument_checks.one_of("pooling", pooling, POOLINGS)
    positions = argument_checks.one_of("positions", positions, POSITIONS)
    norm_first = argument_checks.boolean("norm_first", norm_first)
    dropout = argument_checks.rate("dropout", dropout)
    mask_zero = argument_checks.boolean("mask_zero", mask_zero)
    argument_checks.parameter_budget("token_embedding", vocab_size * embedding_dim)

    tokens = keras.Input(shape=(max_length,), dtype="int32", name="tokens")
    embedding = keras.layers.Embedding(
        vocab_size, embedding_dim, mask_zero=mask_zero, name="token_embedding"
    )
    x = embedding(tokens)  # (batch, max_length, embedding_dim), masked where id == 0 if mask_zero
    num_tokens = max_length
    if pooling == "class_token":
        x = ClassToken(name="class_token")(x)  # (batch, 1 + max_length, embedding_dim)
        num_tokens += 1
    if positions == "sinusoidal":
        x = SinusoidalPositionalEncoding(name="position_encoding")(x)
    else:
        x = LearnedPositionalEmbedding(num_tokens, name="position_embedding")(x)
    x = keras.layers.Dropout(dropout, name="embedding_dropout")(x)
    x = _encoder_stack(x, num_layers, num_heads, ff_dim, dropout, norm_first, "relu", 1e-5)
    if pooling == "mean":
        x = MaskedMeanPooling(name="mean_pooling")(x)  # mean over the real steps
    else:
        x = ClassTokenPooling(name="class_token_pooling")(x)
    probabilities = keras.layers.Dense(num_classes, activation="softmax", name="classifier")(x)
    return keras.Model(tokens, probabilities, name=name)


def vision_transformer(
    image_shape,
    patch_size,
    embedding_dim,
    num_layers,
    num_heads,
    ff_dim,
    num_classes,
    *,
    dropout=0.0,
    layer_norm_epsilon=1e-6,
    name="vision_transformer",
):
    """The Vision Transformer (ViT) of Dosovitskiy et al. (2020).

    An image is cut into `N = (H / P) · (W / P)` patches of `P × P` pixels,
    each flattened and projected to `D = embedding_dim` features; a learned
    class token is put first, a learned position embedding added, and the
    `N + 1` tokens pass `num_layers` pre-LN encoder blocks with GELU feed-forward networks
    (Eqs. 1-4 of the paper):

        z_0 = [x_class; x_p^1 E; …; x_p^N E] + E_pos
        z'_l = MSA(LN(z_{l−1})) + z_{l−1}            l = 1 … num_layers
        z_l = MLP(LN(z'_l)) + z'_l
        y = LN(z_L^0)

    and `y` goes to a softmax classifier (the paper's fine-tuning head, one
    linear layer). The position table starts from `N(0, 0.02²)` as in the
    paper's code. There is no 2D structure in the positions: they learn it
    (see `keras_seq.diagnostics.position_similarity`).

    Args:
        image_shape: `(height, width, channels)`, or an `ImageSpec` (e.g.
            `task.inputs`). Height and width must be multiples of
            `patch_size`.
        patch_size: `P`, the side of a square patch in pixels.
        embedding_dim: `D`, the width of every token; a multiple of
            `num_heads` (keras-hub's `hidden_dim`).
        num_layers: Number of encoder blocks, the paper's `L`.
        num_heads: Attention heads per block.
        ff_dim: Inner size of each block's MLP, 4·D in the paper's models
            (keras-hub's `mlp_dim`).
        num_classes: Number of classes, at least 2.
        dropout: Dropout rate after the position embedding and inside every
            block. Default 0.
        layer_norm_epsilon: Epsilon of every layer normalisation. Default
            1e-6, as in the paper's code.
        name: Name of the model.

    Returns:
        An uncompiled functional `keras.Model` from `(batch, H, W, C)`
        float32 images to `(batch, num_classes)` class probabilities. Its
        layers: `patch_embedding`, `class_token`, `position_embedding`,
        `embedding_dropout`, `encoder_block_0` …, `encoder_layer_norm`,
        `class_token_pooling`, `classifier`.

    Raises:
        ValueError: before anything is built, when the image size is not a
            multiple of the patch size or `embedding_dim` not of `num_heads`.

    Example:

    >>> model = vision_transformer((8, 8, 1), 2, 32, 2, 4, 64, 10)
    >>> model.get_layer("position_embedding").max_length  # 16 patches + class token
    17

    References:
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for
          Image Recognition at Scale", ICLR 2021 (arXiv:2010.11929, 2020).
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """
    height, width, channels = _image_shape(image_shape)
    patch_size = argument_checks.positive_int("patch_size", patch_size, argument_checks.MAX_UNITS)
    embedding_dim, num_layers, num_heads, ff_dim = _check_stack(
        embedding_dim, num_layers, num_heads, ff_dim
    )
    num_classes = argument_checks.int_in_range(
        "num_classes", num_classes, 2, argument_checks.MAX_UNITS
    )
    dropout = argument_checks.rate("dropout", dropout)
    layer_norm_epsilon = argument_checks.positive_float("layer_norm_epsilon", layer_norm_epsilon)
    if height % patch_size or width % patch_size:
        raise ValueError(
            f"Received an invalid value for argument `patch_size`, expected a divisor of the "
            f"image height {height} and width {width}, got {patch_size!r}."
        )
    num_patches = (height // patch_size) * (width // patch_size)

    images = keras.Input(shape=(height, width, channels), name="images")
    x = PatchEmbedding(patch_size, embedding_dim, name="patch_embedding")(images)  # (batch, N, D)
    x = ClassToken(name="class_token")(x)  # (batch, N + 1, D)
    x = LearnedPositionalEmbedding(
        num_patches + 1,
        embeddings_initializer=keras.initializers.RandomNormal(stddev=_POSITION_STDDEV),
        name="position_embedding",
    )(x)
    x = keras.layers.Dropout(dropout, name="embedding_dropout")(x)
    x = _encoder_stack(x, num_layers, num_heads, ff_dim, dropout, True, "gelu", layer_norm_epsilon)
    x = ClassTokenPooling(name="class_token_pooling")(x)  # (batch, D)
    probabilities = keras.layers.Dense(num_classes, activation="softmax", name="classifier")(x)
    return keras.Model(images, probabilities, name=name)


def _encoder_stack(x, num_layers, num_heads, ff_dim, dropout, norm_first, activation, epsilon):
    for index in range(num_layers):
        x = TransformerEncoderBlock(
            num_heads,
            ff_dim,
            dropout=dropout,
            norm_first=norm_first,
            activation=activation,
            layer_norm_epsilon=epsilon,
            name=f"encoder_block_{index}",
        )(x)
    if norm_first:
        # Pre-LN blocks leave their output unnormalised: one norm after the last.
        x = keras.layers.LayerNormalization(epsilon=epsilon, name="encoder_layer_norm")(x)
    return x


def _check_stack(embedding_dim, num_layers, num_heads, ff_dim):
    embedding_dim = argument_checks.positive_int(
        "embedding_dim", embedding_dim, argument_checks.MAX_UNITS
    )
    num_layers = argument_checks.positive_int("num_layers", num_layers, 1000)
    num_heads = argument_checks.positive_int("num_heads", num_heads, argument_checks.MAX_UNITS)
    ff_dim = argument_checks.positive_int("ff_dim", ff_dim, argument_checks.MAX_UNITS)
    if embedding_dim % num_heads:
        raise ValueError(
            f"Received an invalid value for argument `num_heads`, expected a divisor of "
            f"embedding_dim={embedding_dim} (each head gets embedding_dim / num_heads "
            f"features), got {num_heads!r}."
        )
    return embedding_dim, num_layers, num_heads, ff_dim


def _image_shape(image_shape):
    if isinstance(image_shape, ImageSpec):
        return image_shape.shape
    if (
        not isinstance(image_shape, (tuple, list))
        or len(image_shape) != 3
        or not all(
            isinstance(side, numbers.Integral) and not isinstance(side, bool) and side > 0
            for side in image_shape
        )
    ):
        raise argument_checks.invalid(
            "image_shape",
            "(height, width, channels) as positive integers, or an ImageSpec",
            image_shape,
        )
    return tuple(int(side) for side in image_shape)
