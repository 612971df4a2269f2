"""Figures, one consistent paper style (:mod:`mechanism.plots.style`); every function returns a
matplotlib Figure and changes no global state."""
from mechanism.plots.integration import plot_integration_grid, plot_integration_shift, plot_integration_split
from mechanism.plots.passkt import (
    plot_boundary,
    plot_gap_over_t,
    plot_gap_surface,
    plot_pass_curves,
    plot_pass_over_t,
    plot_pass_surfaces,
)
from mechanism.plots.reweighting import plot_decomposition, plot_share_success
from mechanism.plots.strategies import plot_strategy_shares, strategy_map, strategy_table
from mechanism.plots.style import arm_colors, paper_style, save_figure
from mechanism.plots.track import (
    plot_track_divergence,
    plot_track_passkt,
    plot_track_share_panels,
    plot_track_shares,
    plot_track_split,
)

__all__ = [
    "plot_pass_curves", "plot_pass_over_t", "plot_pass_surfaces", "plot_gap_surface", "plot_gap_over_t",
    "plot_boundary", "strategy_map", "plot_strategy_shares", "strategy_table", "plot_share_success",
    "plot_decomposition", "plot_integration_grid", "plot_integration_split", "paper_style", "save_figure",
    "plot_integration_shift",
    "plot_track_shares", "plot_track_share_panels", "plot_track_split", "plot_track_passkt",
    "plot_track_divergence", "arm_colors",
]
