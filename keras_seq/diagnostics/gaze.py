"""Where a captioner looked: attention mass over image regions against the named object's box.

Xu et al. (2015) show, by drawing `α_t` over the image for each word, that
soft attention looks at the object a word is about. With a generated task
whose objects' boxes are known (`keras_seq.tasks.shape_captions`), that can
be measured rather than looked at: for each word about object `k`, the
fraction of the step's attention on regions whose cell overlaps `k`'s box,

    m_t = Σ_{i : cell_i ∩ box_k ≠ ∅} α_ti

beside the same fraction for a uniform gaze, `|{i : cell_i ∩ box_k ≠ ∅}| / L`,
the chance level.
"""

from __future__ import annotations

import numpy as np

from keras_seq._extras import import_extra


def box_regions(boxes, grid, image_size):
    """Which regions' cells overlap each box.

    Args:
        boxes: `(..., 4)` boxes `(top, left, bottom, right)` in pixels.
        grid: `(rows, columns)` of the region grid; region `i` is the cell
            `divmod(i, columns)`, covering `image_size / grid` pixels a side.
        image_size: `(height, width)` of the image in pixels.

    Returns:
        bool `(..., rows · columns)`.
    """
    boxes = np.asarray(boxes, dtype=np.float64)
    rows, columns = grid
    cell_h, cell_w = image_size[0] / rows, image_size[1] / columns
    row, column = np.divmod(np.arange(rows * columns), columns)
    top, left = row * cell_h, column * cell_w
    bottom, right = top + cell_h, left + cell_w
    b = boxes[..., None, :]  # (..., 1, 4)
    return (b[..., 0] < bottom) & (b[..., 2] > top) & (b[..., 1] < right) & (b[..., 3] > left)


def gaze_on_objects(weights, boxes, word_objects, grid, image_size):
    """The attention mass inside the named object's box, per word about an object.

    Args:
        weights: `(n, T, L)` attention of each caption step over the regions.
        boxes: `(n, K, 4)` the boxes of the `K` objects of each image.
        word_objects: int `(n, T)`: the object each step's word is about, or
            −1 for a word about none (skipped).
        grid: `(rows, columns)` of the regions.
        image_size: `(height, width)` in pixels.

    Returns:
        A dict of float arrays over the words about an object: `"mass"`, the
        attention inside the box; `"chance"`, the fraction of regions inside
        it (a uniform gaze's mass); `"other"`, the attention inside the other
        objects' boxes (outside this one's).
    """
    weights = np.asarray(weights, dtype=np.float64)
    word_objects = np.asarray(word_objects)
    inside = box_regions(boxes, grid, image_size)  # (n, K, L)
    image, step = np.nonzero(word_objects >= 0)
    named = word_objects[image, step]
    alpha = weights[image, step]  # (m, L)
    own = inside[image, named]  # (m, L)
    others = inside[image].copy()  # (m, K, L)
    others[np.arange(len(image)), named] = False
    other = others.any(axis=1) & ~own
    return {
        "mass": (alpha * own).sum(axis=-1),
        "chance": own.mean(axis=-1),
        "other": (alpha * other).sum(axis=-1),
    }


# Most words drawn in one gaze figure (a caption is far shorter).
MAX_GAZE_WORDS = 64


def plot_gaze(image, weights, words, grid, *, boxes=None, columns=5, title=None):
    """Draws where a captioner looked for each word, as in Xu et al.'s figures 2 and 3.

    One panel per word: the image lit by the word's attention, as the
    paper draws it. `α_t` over the `rows × columns` regions is spread over
    each region's cell of pixels and scaled by the largest weight of the
    whole caption (so that panels compare), and each pixel is shown at
    `0.25 + 0.75 · α / max α` of its brightness: where the model looked is
    bright, the rest dim.

    Args:
        image: `(H, W, C)` pixel values in [0, 1] (C is 1 or 3).
        weights: `(T, L)` attention of each word over the `L` regions.
        words: The `T` words (labels of the panels).
        grid: `(rows, columns)` of the regions, `rows · columns = L`.
        boxes: Optional `(K, 4)` object boxes `(top, left, bottom, right)`
            in pixels, outlined in every panel.
        columns: Panels per row of the figure. Default 5.
        title: The figure's title; None for none.

    Returns:
        A matplotlib `Figure` (made without `pyplot`).
    """
    figures = import_extra("matplotlib.figure", "app", "keras_seq.diagnostics.plot_gaze")
    patches = import_extra("matplotlib.patches", "app", "keras_seq.diagnostics.plot_gaze")

    image = np.asarray(image, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    words = [str(word) for word in words]
    rows, grid_columns = (int(v) for v in grid)
    if image.ndim != 3 or image.shape[-1] not in (1, 3):
        raise ValueError(f"`image` must be (H, W, 1 or 3), got shape {image.shape}.")
    if weights.ndim != 2 or weights.shape != (len(words), rows * grid_columns):
        raise ValueError(
            f"`weights` must be ({len(words)} words, {rows * grid_columns} regions), got "
            f"shape {weights.shape}."
        )
    if not 1 <= len(words) <= MAX_GAZE_WORDS:
        raise ValueError(f"`words` must hold 1 to {MAX_GAZE_WORDS} words, got {len(words)}.")
    height, width = image.shape[:2]
    if height % rows or width % grid_columns:
        raise ValueError(
            f"`grid` {rows}×{grid_columns} must divide the image's {height}×{width} pixels."
        )
    picture = np.repeat(image, 3, axis=-1) if image.shape[-1] == 1 else image
    top = max(float(weights.max()), 1e-12)
    cell = (height // rows, width // grid_columns)
    panels = len(words)
    columns = max(1, min(int(columns), panels))
    figure_rows = -(-panels // columns)
    figure = figures.Figure(figsize=(2.0 * columns, 2.1 * figure_rows), layout="constrained")
    for index, (word, alpha) in enumerate(zip(words, weights, strict=True)):
        ax = figure.add_subplot(figure_rows, columns, index + 1)
        light = np.kron(alpha.reshape(rows, grid_columns) / top, np.ones(cell))  # (H, W)
        lit = picture * (0.25 + 0.75 * light[..., None])
        ax.imshow(np.clip(lit, 0.0, 1.0), interpolation="nearest", extent=(0, width, height, 0))
        for box in [] if boxes is None else np.asarray(boxes, dtype=np.float64):
            y0, x0, y1, x1 = box
            ax.add_patch(
                patches.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="orange", lw=1)
            )
        ax.set_title(word, fontsize=10)
        ax.set_axis_off()
    if title is not None:
        figure.suptitle(title)
    return figure
