"""Experiments on the learning core, kept out of the estimators: a simulated crowd
(:mod:`.simulate`), the report of ``simulate_crowd`` (:mod:`.crowd_report`) and the core's
benchmark (:mod:`.core_benchmark`). Like :mod:`learning.core`, no Django import."""
