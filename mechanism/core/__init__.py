"""The core layer: what every stage above stands on, importing nothing above it.

The canonical table (:mod:`~mechanism.core.schema`), one-line errors and skip accounting
(:mod:`~mechanism.core.errors`), option and seed conventions (:mod:`~mechanism.core.options`),
resampling (:mod:`~mechanism.core.resample`), answer scoring (:mod:`~mechanism.core.scoring`),
the result protocol (:mod:`~mechanism.core.results`), the on-disk cache
(:mod:`~mechanism.core.cachefile`), and the readings of a step every stage shares: failed calls
(:mod:`~mechanism.core.failures`), generic action tools (:mod:`~mechanism.core.actions`) and the
linear-time pattern engine (:mod:`~mechanism.core.patterns`); packages' exports loaded on first use
(:mod:`~mechanism.core.lazy`).
"""
