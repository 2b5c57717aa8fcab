"""Figures of a profile: MultiMAPS curves with the fitted bandwidth over them (Tikir et al. Figures 3 and 7)
and the fit's error point by point for one stride (Figure 8)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .profile import GB, MachineProfile, MultiMapsPoint


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _curves(profile: MachineProfile) -> dict[str, list[MultiMapsPoint]]:
    curves: dict[str, list[MultiMapsPoint]] = {}
    for point in sorted(profile.multimaps, key=lambda p: (p.pattern != "stride", p.stride or 0)):
        curves.setdefault(point.curve, []).append(point)
    return {k: sorted(v, key=lambda p: p.size_bytes) for k, v in curves.items()}


def _mark_caches(ax: Any, profile: MachineProfile) -> None:
    for cache in profile.caches:
        ax.axvline(cache.size_bytes, color="0.6", linestyle=":", linewidth=1)
        ax.annotate(f"L{cache.level} {_size(cache.size_bytes)}", (cache.size_bytes, 1),
                    xycoords=("data", "axes fraction"), xytext=(2, -10), textcoords="offset points", fontsize=7,
                    color="0.4")


def _size(nbytes: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} B"


def plot_multimaps(profile: MachineProfile, path: str | os.PathLike[str],
                   curves: Sequence[str] | None = None) -> Path:
    """Measured bandwidth vs working set, one curve per stride (and random), fitted values dashed over them."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    fit = profile.bandwidth_fit
    for i, (label, points) in enumerate(_curves(profile).items()):
        if curves and label not in curves:
            continue
        color = f"C{i % 10}"
        sizes = [p.size_bytes for p in points]
        ax.plot(sizes, [p.bandwidth_bytes_per_s / GB for p in points], "o-", color=color, markersize=3, linewidth=1,
                label=f"{label} measured")
        if fit is not None and all(p.hit_rates is not None for p in points):
            modelled = fit.bandwidth([p.hit_rates or [] for p in points]) / GB
            ax.plot(sizes, modelled, "--", color=color, linewidth=1.2, label=f"{label} Eq. 1 fit")
    _mark_caches(ax, profile)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("bandwidth (GB/s)")
    title = f"MultiMAPS on {profile.name} ({profile.host.cpu_model or '?'})"
    if fit is not None and fit.avg_abs_rel_error is not None:
        title += f": fit error {100 * fit.avg_abs_rel_error:.1f} % avg"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout()
    target = Path(path)
    fig.savefig(target, dpi=130)
    plt.close(fig)
    return target


def plot_errors(profile: MachineProfile, path: str | os.PathLike[str], curve: str = "stride 4") -> Path:
    """Relative error of the fit at every point of one curve (the paper's Figure 8 uses stride 4)."""
    from ma_core.errors import ProfileError

    fit = profile.bandwidth_fit
    points = _curves(profile).get(curve)
    if fit is None or not points or any(p.hit_rates is None for p in points):
        raise ProfileError(profile.name, f"no fitted curve {curve!r} to plot errors for")
    plt = _pyplot()
    measured = np.array([p.bandwidth_bytes_per_s for p in points])
    modelled = fit.bandwidth([p.hit_rates or [] for p in points])
    errors = 100 * (modelled - measured) / measured
    fig, ax = plt.subplots(figsize=(8, 3.5))
    sizes = [p.size_bytes for p in points]
    ax.bar(range(len(sizes)), errors, color=["C3" if e < 0 else "C0" for e in errors])
    ax.set_xticks(range(len(sizes)), [_size(s) for s in sizes], rotation=90, fontsize=6)
    ax.axhline(0, color="k", linewidth=0.8)
    ax.set_ylabel("(fit - measured) / measured (%)")
    ax.set_title(f"Fit error per point, {curve}, {profile.name}: avg |error| {np.mean(np.abs(errors)):.1f} %",
                 fontsize=9)
    fig.tight_layout()
    target = Path(path)
    fig.savefig(target, dpi=130)
    plt.close(fig)
    return target
