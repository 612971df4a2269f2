"""Private parts of :class:`mechanism.strategy_space.StrategySpace`: features, clustering,
stability, descriptions."""
