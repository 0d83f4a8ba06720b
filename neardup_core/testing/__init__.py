"""What tests, benchmarks, `neardup tune` and the demo share: generators, the oracle, the corpus, evaluation.

Not imported by the rest of `neardup_core` (as `numpy.testing` is not by numpy)."""
