"""Heatmap of the transition matrix: original value i (rows) x perturbed value j (columns)."""

from __future__ import annotations

import os

from sdc.files import check_output_file, staged_file
from sdc.ptable.table import PTable

PLOT_COMMAND = "sdc ptable --plot"  # the mark of its PNGs (sdc.files)


def plot_transition_matrix(table: PTable, path: str | os.PathLike, title: str = "") -> None:
    """Write a PNG with P(j | i) as colour and annotated in percent (as seed 000, figure 1)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    path = check_output_file(path, PLOT_COMMAND)
    rows, cols, matrix = table.transition_matrix()
    shown = np.where(matrix > 0, matrix, np.nan)  # blank where a target is impossible
    width = max(6.0, 0.62 * len(cols) + 2)
    height = max(3.5, 0.5 * len(rows) + 1.8)
    fig, ax = plt.subplots(figsize=(width, height))
    image = ax.imshow(shown, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for r in range(len(rows)):
        for c in range(len(cols)):
            p = matrix[r, c]
            if p > 0:
                text = f"{100 * p:.1f}" if p >= 0.0005 else "<.1"
                ax.text(c, r, text, ha="center", va="center", fontsize=8, color="white" if p > 0.55 else "black")
    ax.set_xticks(range(len(cols)), [str(c) for c in cols])
    labels = [str(r) for r in rows]
    labels[-1] = f"≥{rows[-1]}"
    ax.set_yticks(range(len(rows)), labels)
    ax.set_xlabel("perturbed value j")
    ax.set_ylabel("original value i")
    ax.set_title(title or "transition probabilities P(j | i) in %")
    fig.colorbar(image, ax=ax, label="P(j | i)", shrink=0.8)
    fig.tight_layout()
    try:
        with staged_file(path, suffix=".png", command=PLOT_COMMAND) as tmp:
            fig.savefig(tmp, dpi=110)
    finally:
        plt.close(fig)
