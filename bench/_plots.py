"""PNG plots for docs/benchmarks/ (matplotlib, in the dev extra). Small on purpose: a reader's page, not a
data file (each under about 150 KB)."""

from __future__ import annotations

from pathlib import Path

from bench.common import pct

PERCENTILES = (50, 75, 90, 95, 99)


def concurrency(
    folder: Path,
    runs: dict[str, tuple[list[float], list[float]]],
    *,
    requests: int = 200,
    spread: float = 2.0,
) -> list[Path]:
    """``runs``: label ("SQLite, --workers 1") -> (provider text-shown ms, CareerWise first-text ms), in
    the order to show; ``requests`` streams opened over ``spread`` seconds. Returns the files written."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display; must precede pyplot
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    written = []

    cols = min(2, len(runs))
    rows = (len(runs) + cols - 1) // cols
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.2 * cols, 3.0 * rows), sharey=True, squeeze=False, dpi=100
    )
    axes_list = [ax for row in axes for ax in row]
    for ax in axes_list[len(runs) :]:
        ax.set_visible(False)
    for ax, (label, (provider, ours)) in zip(axes_list, runs.items(), strict=False):
        for values, curve, colour in (
            (provider, "provider alone (text shown)", "#888888"),
            (ours, "through CareerWise (first text)", "#1f77b4"),
        ):
            ordered = sorted(values)
            n = len(ordered)
            ax.step(ordered, [(i + 1) / n for i in range(n)], where="post", label=curve, color=colour)
        ax.set_title(label, fontsize=10)
        ax.set_xscale("log")  # the provider's ~0.6 s and CareerWise's seconds on one readable axis
        ax.set_xlabel("time to first visible text (ms, log scale)")
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel(f"share of the {requests} requests")
    axes_list[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = folder / "concurrency-latency.png"
    fig.savefig(path)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(6.5, 3.4), dpi=100)
    width = 0.8 / len(runs)
    for k, (label, (provider, ours)) in enumerate(runs.items()):
        added = [pct(ours, q) - pct(provider, q) for q in PERCENTILES]
        xs = [i + (k - (len(runs) - 1) / 2) * width for i in range(len(PERCENTILES))]
        bars = ax.bar(xs, added, width, label=label)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    ax.axhline(100, color="#d62728", linestyle="--", linewidth=1, label="goal at p99: 100 ms")
    ax.set_xticks(range(len(PERCENTILES)), [f"p{q}" for q in PERCENTILES])
    ax.set_ylabel("added latency (ms)")
    ax.set_title(f"CareerWise pN minus provider pN, {requests} streams in {spread:.0f} s", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = folder / "concurrency-added.png"
    fig.savefig(path)
    plt.close(fig)
    written.append(path)
    return written
