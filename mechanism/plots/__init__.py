"""Figures: one consistent paper style (see :mod:`mechanism.plots.style`)."""
