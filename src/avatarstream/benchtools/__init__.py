"""Measuring tools for benchmark scripts: looped speech, a timed render, the GPU scripts' flags and result files.

They sit below the families so that a family's own GPU script (``families/<name>/gpu_bench.py``) can use
them while ``benchmarks/`` reaches the families only through the registry.
"""
