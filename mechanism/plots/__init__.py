"""Figures, one consistent paper style (:mod:`mechanism.plots.style`); every function returns a
matplotlib Figure and changes no global state.

Names load on first use: a process that saves figures (:mod:`mechanism.plots.background`)
needs the style alone, not every figure's analysis.
"""
from __future__ import annotations

from mechanism.core.lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(("plot_integration_grid", "plot_integration_shift", "plot_integration_split"),
                    "mechanism.plots.integration"),
    **dict.fromkeys(("plot_boundary", "plot_gap_over_t", "plot_gap_surface", "plot_pass_curves", "plot_pass_over_t",
                     "plot_pass_surfaces"), "mechanism.plots.passkt"),
    **dict.fromkeys(("plot_decomposition", "plot_share_success"), "mechanism.plots.reweighting"),
    **dict.fromkeys(("plot_strategy_shares", "strategy_map", "strategy_table"), "mechanism.plots.strategies"),
    "saving_in_background": "mechanism.plots.background",
    **dict.fromkeys(("arm_colors", "paper_style", "save_figure"), "mechanism.plots.style"),
    **dict.fromkeys(("plot_track_divergence", "plot_track_passkt", "plot_track_share_panels", "plot_track_shares",
                     "plot_track_split"), "mechanism.plots.track"),
}

__all__ = [
    "plot_pass_curves", "plot_pass_over_t", "plot_pass_surfaces", "plot_gap_surface", "plot_gap_over_t",
    "plot_boundary", "strategy_map", "plot_strategy_shares", "strategy_table", "plot_share_success",
    "plot_decomposition", "plot_integration_grid", "plot_integration_split", "paper_style", "save_figure",
    "plot_integration_shift",
    "plot_track_shares", "plot_track_share_panels", "plot_track_split", "plot_track_passkt",
    "plot_track_divergence", "arm_colors", "saving_in_background",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
