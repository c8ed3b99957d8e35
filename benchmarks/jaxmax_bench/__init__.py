"""jaxmax benchmark package: ``benchmarks/run.py`` is its command-line entry.

Modules: ``cases`` (sizes, seeded inputs and their data shapes, the Case/Impl records),
``backends`` (builders of timed calls per runtime), one module per group (``reduce``,
``logical_or``, ``max_pool``, ``pool_family``, ``segment_max``, ``eager``, ``elementwise``,
``top_k``, ``adaptive_unpool``, ``data_shapes``, ``long_window``, ``many_shapes``) registered in
``groups``, ``timing`` (round-robin sampling, result digests, number formats), ``compile_cost``
(compile time and memory in a child process with limits), ``workers`` (one subprocess per
runtime), ``report`` (header, table, ratios, chart, markdown) and ``runner`` (the command line).
"""
