"""The report's figures as PNG files (matplotlib, Agg backend): success-matrix heatmaps, per-task success
curves over a whole lifelong run, a spider chart of the CL criteria, and a task-order comparison."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from libero_ll.evaluation.success import SuccessTensor

# How criteria keys are written on figures.
DISPLAY = {"BWT_plus": "BWT+", "FWT_prime": "FWT'"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)  # files only; never open a window
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    _pyplot().close(fig)


def plot_heatmap(tensor: SuccessTensor, title: str, path: Path) -> None:
    """The success matrix as a heatmap (rows: after learning task i; columns: tested on task j).

    Args:
        tensor: the run's success tensor.
        title: figure title.
        path: PNG file to write.
    """
    plt = _pyplot()
    R = np.asarray(tensor.matrix, dtype=np.float64)
    K = R.shape[0]
    size = 1.6 + 0.55 * K
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#dddddd")  # grey: not evaluated
    im = ax.imshow(np.ma.masked_invalid(R), vmin=0.0, vmax=1.0, cmap=cmap)
    for i in range(K):
        for j in range(K):
            text = "–" if math.isnan(R[i, j]) else f"{R[i, j]:.2f}"
            dark = math.isnan(R[i, j]) or R[i, j] > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="black" if dark else "white")
    labels = [f"T{k + 1}" for k in range(K)]
    ax.set_xticks(range(K), labels)
    ax.set_yticks(range(K), labels)
    ax.set_xlabel("tested on task")
    ax.set_ylabel("after learning task")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="success")
    _save(fig, path)


def lifelong_curve(tensor: SuccessTensor, task: int) -> tuple[np.ndarray, np.ndarray]:
    """Task ``task``'s success over the whole lifelong run, on one epoch axis.

    Stage k (learning task k) spans [start_k, start_k + E_k], E_k its last evaluation epoch. Before its
    stage the task contributes its zero-shot entries of the matrix (at the end of each earlier stage);
    during its stage its measured curve; at the end of its stage the kept policy's success c[k, k]; after
    it the matrix rows of the later stages. Points not evaluated are left out.

    Returns:
        (x, y): epochs on the lifelong axis and success fractions.
    """
    K = tensor.num_tasks
    lengths = [max(e, default=0) for e in tensor.eval_epochs]
    starts = np.concatenate([[0], np.cumsum(lengths)])
    R = np.asarray(tensor.matrix, dtype=np.float64)
    x: list[float] = []
    y: list[float] = []

    def add(at: float, value: float) -> None:
        if not math.isnan(value):
            x.append(float(at))
            y.append(float(value))

    for stage in range(K):
        end = starts[stage + 1]
        if stage == task:
            for e, c in zip(tensor.eval_epochs[task], tensor.curves[task]):
                add(starts[stage] + e, c)
        add(end, R[stage, task])
    return np.asarray(x), np.asarray(y)


def stage_losses(tensor: SuccessTensor, task: int) -> tuple[np.ndarray, np.ndarray]:
    """Task ``task``'s mean training loss per epoch of its own stage, on the axis of ``lifelong_curve``.

    Returns:
        (x, y): epochs on the lifelong axis (1..E after the stage's start) and losses (NaN epochs left out).
    """
    lengths = [max(e, default=0) for e in tensor.eval_epochs]
    start = float(sum(lengths[:task]))
    y = np.asarray(tensor.losses[task], dtype=np.float64)
    x = start + np.arange(1, len(y) + 1, dtype=np.float64)
    keep = ~np.isnan(y)
    return x[keep], y[keep]


def plot_task_curves(tensors: Sequence[SuccessTensor], labels: Sequence[str], title: str, path: Path) -> None:
    """Per-task success over the whole lifelong run, one panel per task, one line per run (seed), with
    each run's training loss during the task's stage (dashed, right axis).

    Args:
        tensors: the runs' success tensors (one method, several seeds); panels follow the first run's
            task order, and tasks are matched by name.
        labels: one legend label per run.
        title: figure title.
        path: PNG file to write.
    """
    plt = _pyplot()
    names = list(tensors[0].task_names)
    cols = min(len(names), 4) or 1
    rows = max(1, math.ceil(len(names) / cols))
    # One x axis for every panel: the whole lifelong run, so the stages line up across tasks.
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 2.5 * rows), squeeze=False, sharex=True, sharey=True
    )
    colors = plt.get_cmap("tab10")
    for p, name in enumerate(names):
        ax = axes[p // cols][p % cols]
        loss_ax = None
        for r, (tensor, label) in enumerate(zip(tensors, labels)):
            if name not in tensor.task_names:
                continue
            k = tensor.task_names.index(name)
            x, y = lifelong_curve(tensor, k)
            ax.plot(x, y, marker="o", markersize=3, linewidth=1.2, color=colors(r % 10), label=label)
            lx, ly = stage_losses(tensor, k)
            if len(ly):
                if loss_ax is None:
                    loss_ax = ax.twinx()
                    loss_ax.set_ylabel("training loss (dashed)", fontsize=7)
                    loss_ax.tick_params(labelsize=6)
                loss_ax.plot(lx, ly, linestyle="--", linewidth=0.9, alpha=0.7, color=colors(r % 10))
            if r == 0:
                lengths = [max(e, default=0) for e in tensor.eval_epochs]
                ends = np.cumsum(lengths)
                start = ends[k] - lengths[k]
                ax.axvspan(start, ends[k], color="#f2e6c9", zorder=0)
                for end in ends[:-1]:
                    ax.axvline(end, color="#999999", linestyle=":", linewidth=0.8)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"T{p + 1}: {_short(name)}", fontsize=8)
        ax.set_xlabel("epoch of the lifelong run", fontsize=7)
        ax.tick_params(labelsize=7)
        if p % cols == 0:
            ax.set_ylabel("success", fontsize=8)
    for q in range(len(names), rows * cols):
        axes[q // cols][q % cols].axis("off")
    handles, legend = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, legend, loc="lower center", ncol=min(len(legend), 6), fontsize=7, frameon=False)
    fig.suptitle(title + " (shaded: the task's own stage; dashed: training loss)", fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    _save(fig, path)


def plot_spider(values: Mapping[str, Mapping[str, float]], axes_labels: Sequence[str], path: Path) -> None:
    """Spider (radar) chart of criteria in [0, 1], one polygon per method (larger area is better).

    Args:
        values: method label → criterion name → mean value (NaN drawn as 0 and marked in the axis label).
        axes_labels: the criteria to draw, in order around the chart.
        path: PNG file to write.
    """
    plt = _pyplot()
    n = len(axes_labels)
    angles = np.linspace(0, 2 * np.pi, n, endpoint=False).tolist()
    fig, ax = plt.subplots(figsize=(5.2, 5.2), subplot_kw={"projection": "polar"})
    colors = plt.get_cmap("tab10")
    for m, (label, crit) in enumerate(values.items()):
        data = [float(crit.get(c, math.nan)) for c in axes_labels]
        data = [0.0 if math.isnan(v) else v for v in data]
        ax.plot(angles + angles[:1], data + data[:1], color=colors(m % 10), linewidth=1.5, label=label)
        ax.fill(angles + angles[:1], data + data[:1], color=colors(m % 10), alpha=0.12)
    ax.set_xticks(angles, [DISPLAY.get(c, c) for c in axes_labels], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], ["0.25", "0.5", "0.75", "1"], fontsize=6)
    ax.legend(loc="upper right", bbox_to_anchor=(1.35, 1.12), fontsize=7)
    _save(fig, path)


def plot_order_comparison(
    aucs: Mapping[str, Mapping[str, float]], task_names: Sequence[str], path: Path
) -> None:
    """Per-task AUC of one method under different task orders, as grouped bars.

    Args:
        aucs: order label → task name → mean AUC_k over the runs with that order; a task no run of an order
            measured (NaN or absent) gets no bar but "n/a" where it would stand.
        task_names: the tasks, in the order of the x axis.
        path: PNG file to write.
    """
    plt = _pyplot()
    n = max(1, len(aucs))
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(task_names), 3.0))
    colors = plt.get_cmap("tab10")
    for o, (label, per_task) in enumerate(aucs.items()):
        heights = [float(per_task.get(t, math.nan)) for t in task_names]
        xs = np.arange(len(task_names)) + (o - (n - 1) / 2) * width
        ax.bar(xs, np.nan_to_num(heights), width=width, color=colors(o % 10), label=label)
        for x, h in zip(xs, heights):
            if not math.isfinite(h):
                ax.text(x, 0.02, "n/a", ha="center", va="bottom", rotation=90, fontsize=6, color=colors(o % 10))
    ax.set_xticks(
        range(len(task_names)), [_short(t) for t in task_names], fontsize=7, rotation=20, ha="right"
    )
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("AUC_k (LIBERO)")
    ax.legend(fontsize=7)
    _save(fig, path)


def _short(name: str, width: int = 28) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"
