"""What positions look like to a Transformer: the fixed sinusoids and what a ViT learns.

Self-attention cannot tell one order of its inputs from another, so a
Transformer adds a vector per position to each token. Vaswani et al. (2017)
use fixed sinusoids of geometrically spaced wavelengths,

    PE(pos, 2i)   = sin(pos / 10000^(2i/d))
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d))

which `plot_positional_encoding` draws as a position × dimension heatmap:
fast oscillations in the first dimensions, slow ones in the last.

A Vision Transformer (Dosovitskiy et al. 2020) learns one vector per patch
position instead, from a 1D table with no notion of rows and columns, yet
after training nearby patches have similar vectors, and patches in the same
row or column too (the paper's Figure 7, centre). `position_similarity`
measures that: the cosine similarity between every pair of patch positions,
arranged on the patch grid; `plot_position_similarity` draws one small
heatmap per patch, as the paper does.
"""

from __future__ import annotations

import math

import keras
import numpy as np

from keras_seq import argument_checks
from keras_seq._extras import import_extra
from keras_seq.layers import (
    ClassToken,
    LearnedPositionalEmbedding,
    PatchEmbedding,
    SinusoidalPositionalEncoding,
)

# The heatmap draws one cell per (position, dimension): past these it is a blur.
MAX_PLOT_LENGTH = 10_000
MAX_PLOT_DIM = 4096
# One small axes per patch: a 32 × 32 grid is already 1,024 of them.
MAX_PLOT_GRID = 32


def plot_positional_encoding(
    d_model,
    length,
    *,
    max_wavelength=10000,
    ax=None,
    cmap="RdBu_r",
    title="Sinusoidal positional encoding",
):
    """Draws the sinusoidal positional encoding as a position × dimension heatmap.

    The values drawn are what `keras_seq.layers.SinusoidalPositionalEncoding`
    adds to a `(1, length, d_model)` input of zeros: row `pos`, column `j`
    is `PE(pos, j)`, in [−1, 1].

    Args:
        d_model: `d`, the number of dimensions (columns), at most 4096.
        length: Number of positions (rows), at most 10,000.
        max_wavelength: The base of the wavelengths, 10000 in the paper.
        ax: A matplotlib `Axes` to draw on. Default: a new `Figure` (made
            without `pyplot`, so nothing is shown or kept open).
        cmap: A matplotlib colour map. Default `"RdBu_r"`: −1 blue, +1 red.
        title: The axes title; `None` for none.

    Returns:
        The matplotlib `Figure` holding the axes; the heatmap is
        `figure.axes[0].images[0]` (`get_array()` gives the `(length,
        d_model)` values).

    Example:

    >>> figure = plot_positional_encoding(64, 100)  # then figure.savefig("pe.png")
    >>> figure.axes[0].images[0].get_array().shape
    (100, 64)

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
          Section 3.5.
    """
    d_model = argument_checks.positive_int("d_model", d_model, MAX_PLOT_DIM)
    length = argument_checks.positive_int("length", length, MAX_PLOT_LENGTH)
    encoding_layer = SinusoidalPositionalEncoding(max_wavelength=max_wavelength)
    zeros = np.zeros((1, length, d_model), dtype="float32")
    encoding = keras.ops.convert_to_numpy(encoding_layer(zeros))[0]  # (length, d_model)

    figure, ax = _figure_and_axes(ax, figsize=(7.0, 4.5))
    image = ax.imshow(
        encoding,
        aspect="auto",
        cmap=cmap,
        vmin=-1.0,
        vmax=1.0,
        interpolation="nearest",
        origin="upper",
    )
    ax.set_xlabel("dimension j (sin at even j, cos at odd j)")
    ax.set_ylabel("position pos")
    if title is not None:
        ax.set_title(title)
    figure.colorbar(image, ax=ax, label="PE(pos, j)")
    return figure


def position_similarity(vit_model, *, grid_shape=None):
    """Cosine similarity between the learned position embeddings of every pair of patches.

    Reads the table `E_pos` of the model's `LearnedPositionalEmbedding` (one
    row per token), drops the class token's row when the model has a
    `ClassToken` (it comes first), keeps one row per patch, `e_1 … e_N`, in
    the patch order of `PatchEmbedding` (row-major: left to right, top to
    bottom), and returns

        S[r, c, r', c'] = ⟨e_p, e_q⟩ / (‖e_p‖ ‖e_q‖),
        p = r · grid_w + c,  q = r' · grid_w + c'

    so `S[r, c]` is a `(grid_h, grid_w)` map of how similar patch `(r, c)`'s
    position embedding is to every other's. A zero row has similarity 0 to
    everything.

    Args:
        vit_model: A model with one `LearnedPositionalEmbedding` layer, e.g.
            from `keras_seq.models.vision_transformer` (nested models are
            searched too).
        grid_shape: `(grid_h, grid_w)`, the patches per column and row.
            Default: from the `PatchEmbedding` layer's patch size and the
            image size it was built on, or, with no such layer, a square
            grid.

    Returns:
        A float64 NumPy array `(grid_h, grid_w, grid_h, grid_w)` in [−1, 1].

    Example:

    >>> from keras_seq.models import vision_transformer
    >>> vit = vision_transformer((8, 8, 1), 2, 32, 1, 4, 64, 10)
    >>> position_similarity(vit).shape
    (4, 4, 4, 4)

    References:
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for
          Image Recognition at Scale", ICLR 2021 (arXiv:2010.11929, 2020),
          Section 4.5 and Figure 7.
    """
    table, grid_h, grid_w = _patch_position_table(vit_model, grid_shape)
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    unit = np.divide(table, norms, out=np.zeros_like(table), where=norms > 0)
    similarity = np.clip(unit @ unit.T, -1.0, 1.0)  # (N, N)
    return similarity.reshape(grid_h, grid_w, grid_h, grid_w)


def plot_position_similarity(
    vit_model_or_similarity,
    *,
    grid_shape=None,
    figure=None,
    cmap="viridis",
    title="Position embedding similarity",
):
    """Draws the similarity of each patch's position embedding to all others', on the grid.

    One small heatmap per patch, placed at that patch's place in the grid:
    the heatmap at row `r`, column `c` is `S[r, c]`, how similar the
    position embedding of patch `(r, c)` is to that of every patch (the
    brightest cell is the patch itself, similarity 1). As in Figure 7
    (centre) of Dosovitskiy et al. (2020), a trained ViT shows a bright blob
    around each patch, often with its row and column: it has learned the 2D
    layout from a 1D table.

    Args:
        vit_model_or_similarity: A model (see `position_similarity`) or the
            array `position_similarity` returned.
        grid_shape: Passed to `position_similarity` for a model.
        figure: A matplotlib `Figure` to draw on (it should be empty).
            Default: a new one (made without `pyplot`).
        cmap: A matplotlib colour map. Default `"viridis"`.
        title: The figure title; `None` for none.

    Returns:
        The matplotlib `Figure`: `grid_h · grid_w` heatmap axes, in row-major
        patch order, then the colour bar's.

    Example:

    >>> from keras_seq.models import vision_transformer
    >>> vit = vision_transformer((8, 8, 1), 2, 32, 1, 4, 64, 10)
    >>> len(plot_position_similarity(vit).axes)  # 16 patches and a colour bar
    17

    References:
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for
          Image Recognition at Scale", ICLR 2021 (arXiv:2010.11929, 2020),
          Figure 7.
    """
    if isinstance(vit_model_or_similarity, keras.Model):
        similarity = position_similarity(vit_model_or_similarity, grid_shape=grid_shape)
    else:
        similarity = np.asarray(vit_model_or_similarity, dtype=np.float64)
        if similarity.ndim != 4 or similarity.shape[:2] != similarity.shape[2:]:
            raise argument_checks.invalid(
                "vit_model_or_similarity",
                "a keras.Model or an array (grid_h, grid_w, grid_h, grid_w)",
                f"an array of shape {similarity.shape}",
            )
    grid_h, grid_w = similarity.shape[:2]
    if max(grid_h, grid_w) > MAX_PLOT_GRID:
        raise ValueError(
            f"plot_position_similarity draws one heatmap per patch; a {grid_h}×{grid_w} grid "
            f"is more than the {MAX_PLOT_GRID}×{MAX_PLOT_GRID} it draws."
        )

    if figure is None:
        figures = import_extra(
            "matplotlib.figure", "app", "keras_seq.diagnostics.plot_position_similarity"
        )
        side = min(1.0 + 0.8 * max(grid_h, grid_w), 12.0)
        figure = figures.Figure(figsize=(side * grid_w / max(grid_h, grid_w) + 1.0, side))
    axes = figure.subplots(grid_h, grid_w, squeeze=False)
    image = None
    for r in range(grid_h):
        for c in range(grid_w):
            ax = axes[r, c]
            image = ax.imshow(
                similarity[r, c], cmap=cmap, vmin=-1.0, vmax=1.0, interpolation="nearest"
            )
            ax.set_xticks([])
            ax.set_yticks([])
    for c in range(grid_w):
        axes[-1, c].set_xlabel(str(c + 1), fontsize="small")
    for r in range(grid_h):
        axes[r, 0].set_ylabel(str(r + 1), fontsize="small")
    figure.supxlabel("input patch column")
    figure.supylabel("input patch row")
    figure.colorbar(image, ax=axes, shrink=0.8, label="cosine similarity")
    if title is not None:
        figure.suptitle(title)
    return figure


def _figure_and_axes(ax, figsize):
    if ax is None:
        figures = import_extra(
            "matplotlib.figure", "app", "keras_seq.diagnostics.plot_positional_encoding"
        )
        figure = figures.Figure(figsize=figsize, layout="constrained")
        return figure, figure.add_subplot()
    return ax.figure, ax


def _all_layers(model):
    """Every layer in `model`, nested models included, depth first."""
    for layer in model.layers:
        yield layer
        if isinstance(layer, keras.Model):
            yield from _all_layers(layer)


def _patch_position_table(model, grid_shape):
    """The position table rows of the patches, `(N, D)` float64, and the grid shape."""
    if not isinstance(model, keras.Model):
        raise argument_checks.invalid(
            "vit_model", "a keras.Model with a LearnedPositionalEmbedding layer", model
        )
    layers = list(_all_layers(model))
    tables = [layer for layer in layers if isinstance(layer, LearnedPositionalEmbedding)]
    if len(tables) != 1:
        raise ValueError(
            f"position_similarity needs a model with exactly one LearnedPositionalEmbedding "
            f"layer; `{model.name}` has {len(tables)}."
        )
    [positions] = tables
    if not positions.built:
        raise ValueError(
            f"The LearnedPositionalEmbedding layer `{positions.name}` of `{model.name}` is "
            "not built: it holds no table yet."
        )
    table = keras.ops.convert_to_numpy(positions.embeddings).astype(np.float64)
    offset = 1 if any(isinstance(layer, ClassToken) for layer in layers) else 0

    if grid_shape is None:
        grid_shape = _grid_from_patches(layers, len(table) - offset)
    else:
        if not isinstance(grid_shape, (tuple, list)) or len(grid_shape) != 2:
            raise argument_checks.invalid("grid_shape", "a pair (grid_h, grid_w)", grid_shape)
        grid_shape = tuple(
            argument_checks.positive_int("grid_shape", side, MAX_PLOT_LENGTH) for side in grid_shape
        )
    grid_h, grid_w = grid_shape
    num_patches = grid_h * grid_w
    if offset + num_patches > len(table):
        raise ValueError(
            f"A {grid_h}×{grid_w} patch grid needs {offset + num_patches} rows of position "
            f"embeddings ({'a class token and ' if offset else ''}{num_patches} patches), but "
            f"`{positions.name}` holds {len(table)}."
        )
    return table[offset : offset + num_patches], grid_h, grid_w


def _grid_from_patches(layers, num_rows):
    patches = [layer for layer in layers if isinstance(layer, PatchEmbedding)]
    if len(patches) == 1 and patches[0].built:
        [patch_layer] = patches
        image_shape = (patch_layer.get_build_config() or {}).get("input_shape")
        patch = patch_layer.patch_size
        patch_h, patch_w = (patch, patch) if isinstance(patch, int) else tuple(patch)
        if image_shape is not None and None not in tuple(image_shape[1:3]):
            return image_shape[1] // patch_h, image_shape[2] // patch_w
    side = math.isqrt(num_rows)
    if side * side != num_rows:
        raise ValueError(
            f"Cannot tell the patch grid: {num_rows} patch positions are not a square number "
            "and the model has no built PatchEmbedding layer. Pass `grid_shape`."
        )
    return side, side
