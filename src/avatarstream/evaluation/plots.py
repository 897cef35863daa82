"""PNG plots of an evaluation: lip-sync trace, identity per minute, seams with and without I-chunks."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from avatarstream.evaluation.run import TARGETS, Run


def _normalised(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() + 1e-9)


def lip_sync_plot(run: Run, path: Path, fps: int, seconds: float = 12.0) -> None:
    n = min(len(run.truth), int(seconds * fps))
    t = np.arange(n) / fps
    fig, ax = plt.subplots(figsize=(9, 3))
    ax.plot(t, _normalised(run.truth)[:n], label="ground truth (renderer)", lw=1.5)
    ax.plot(t, _normalised(run.measured["openness"])[:n], label="measured in generated frames", lw=1.2)
    ax.set(
        xlabel="seconds",
        ylabel="mouth openness (z-score)",
        title=f"Lip sync on a held-out identity and sentence: r = {run.lip_sync:.3f} (target >= {TARGETS['lip_sync_correlation']})",
    )
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def identity_plot(minutes: list[float], baseline: list[float], path: Path) -> None:
    x = np.arange(1, len(minutes) + 1)
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.bar(x - 0.2, minutes, width=0.4, label="generated")
    ax.bar(x + 0.2, baseline[: len(minutes)], width=0.4, label="ground-truth render (motion only)")
    ratio = minutes[-1] / minutes[0]
    ax.set(
        xlabel="minute",
        ylabel="identity error (0-255)",
        title=f"Identity vs reference over a long run: last/first = {ratio:.3f} (target <= {TARGETS['identity_last_over_first']})",
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def seam_plot(pairs: list[tuple[Run, Run]], path: Path) -> None:
    on = [a.seam_ratio for a, _ in pairs]
    off = [b.seam_ratio for _, b in pairs]
    x = np.arange(len(pairs))
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.bar(x - 0.2, on, width=0.4, label="I-chunks on (a=3)")
    ax.bar(x + 0.2, off, width=0.4, label="I-chunks off")
    ax.axhline(TARGETS["seam_ratio_with_i_chunks"], color="k", ls="--", lw=1, label="target")
    ax.axhline(1.0, color="grey", ls=":", lw=1)
    ax.set_xticks(x, [f"id {a.identity_seed}" for a, _ in pairs], fontsize=8)
    ax.set(ylabel="change across / within chunks", title="Seams: frame change at chunk borders vs inside chunks")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(series: dict, folder: Path, fps: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "eval-lipsync.png", folder / "eval-seams.png"]
    lip_sync_plot(series["short"][0][0], paths[0], fps)
    seam_plot(series["short"], paths[1])
    if "long" in series:
        _, minutes, baseline = series["long"]
        paths.append(folder / "eval-identity.png")
        identity_plot(minutes, baseline, paths[-1])
    return paths
