"""The analyses, over the canonical table: PASS@(k,T) and the capability boundary
(:mod:`~mechanism.analysis.passkt`, :mod:`~mechanism.analysis.boundaries`), strategies
(:mod:`~mechanism.analysis.segmentation`, :mod:`~mechanism.analysis.embed`,
:mod:`~mechanism.analysis.strategy_space`), and comparisons of arms
(:mod:`~mechanism.analysis.compare`, :mod:`~mechanism.analysis.information`,
:mod:`~mechanism.analysis.checkpoints`), with shards in worker processes
(:mod:`~mechanism.analysis.parallel`). They import the core, the readers and the datasets,
never the plots, the report or the command line.
"""
