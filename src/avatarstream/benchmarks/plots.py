"""PNG plots for benchmark results (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def stage_bars(path: Path, values: dict[str, float], title: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.barh(list(values), list(values.values()), color="#4477aa")
    ax.set_xlabel("ms")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def lines(path: Path, x: list[float], series: dict[str, list[float]], *, xlabel: str, title: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for name, ys in series.items():
        ax.plot(x, ys, marker="o" if len(x) < 20 else None, label=name)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def grouped_bars(path: Path, groups: list[str], series: dict[str, list[float]], *, ylabel: str, title: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / len(series)
    for i, (name, ys) in enumerate(series.items()):
        ax.bar([g + i * width for g in range(len(groups))], ys, width, label=name)
    ax.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))], groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
