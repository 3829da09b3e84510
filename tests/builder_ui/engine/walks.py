"""The engine's Ray tests' data: a CSV of random walks, labelled by their direction."""

from __future__ import annotations

import numpy as np


def write_walks(path, count: int, steps: int) -> None:
    """`count` seeded random walks of `steps` steps, each row `up|down,x1,…,xT`: whether the
    walk ends above where it started (the label a classifier learns), then the walk."""
    rng = np.random.default_rng(0)
    walks = rng.normal(size=(count, steps)).cumsum(axis=1)
    labels = np.where(walks[:, -1] > walks[:, 0], "up", "down")
    with open(path, "w", encoding="utf-8") as file:
        for label, row in zip(labels, walks, strict=True):
            file.write(label + "," + ",".join(f"{v:.4f}" for v in row) + "\n")
