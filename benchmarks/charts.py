"""Charts several benchmarks share."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def success_bars(summary: dict[str, dict[str, Any]], title: str, path: Path,
                 colors: dict[str, str] | None = None) -> None:
    """Bars of `success_rate` per name with their `ci95` (Wilson) as error bars, written to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary)
    rates = [summary[n]["success_rate"] for n in names]
    # max(0, ...): at a rate of 0 or 1 the interval's end equals the rate up to rounding
    errors = [[max(0.0, r - summary[n]["ci95"][0]) for n, r in zip(names, rates)],
              [max(0.0, summary[n]["ci95"][1] - r) for n, r in zip(names, rates)]]
    colors = colors or {}
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.bar(range(len(names)), rates, yerr=errors, capsize=6, color=[colors.get(n, "tab:purple") for n in names])
    for i, rate in enumerate(rates):
        ax.text(i, rate / 2, f"{100 * rate:.0f}%", ha="center", color="white", fontsize=9)
    ax.set_xticks(range(len(names)), names)
    ax.set(ylim=(0, 1.05), ylabel="success rate (Wilson 95% CI)")
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
