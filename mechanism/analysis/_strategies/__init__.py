"""Private parts of :class:`mechanism.analysis.strategy_space.StrategySpace`, one job each: params
(declared constraints), features (move tokens, the joined space), reduce (UMAP), clustering
(clusterers, renumbering, medoids, outliers), families, stability (bootstrap, seed agreement,
sweep), describe and description (the description table, names, examples), association,
fitcache (the fit cache) and persist (save and load). None imports the estimator's module."""
