"""Data with a known answer, as scikit-learn's ``datasets``: the built-in simulator
(:mod:`~mechanism.datasets.simulation`, planted PASS@(k,T), strategies and reweighting) and the
planted validation worlds (:mod:`~mechanism.datasets.worlds`), written in real agents' log
formats. They stand on the core and the readers only, so an analysis can be checked against
their truth without the analysis being able to shape it.
"""
