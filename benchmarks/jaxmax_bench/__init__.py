"""jaxmax benchmark package: ``benchmarks/run.py`` is its command-line entry.

Modules: ``cases`` (sizes, seeded inputs, the Case/Impl records), ``backends`` (builders of
timed calls per runtime), one module per group (``reduce``, ``logical_or``, ``max_pool``,
``pool_family``, ``segment_max``, ``eager``) registered in ``groups``, ``timing`` (round-robin
sampling, result digests, number formats), ``workers`` (one subprocess per runtime), ``report``
(header, table, ratios, chart, markdown) and ``runner`` (the command line).
"""
