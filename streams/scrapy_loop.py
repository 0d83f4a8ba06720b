"""Deprecated: the Scrapy middlewares moved to `streams.scrapy` (`streams.scrapy.NeardupFrontier`,
`streams.scrapy.NeardupItems`). This module keeps the old paths working and warns once on import."""

import warnings

from streams.scrapy import CANONICAL_FIELD, LoopOptions, NeardupFrontier, NeardupItems, read_loop_settings

warnings.warn("streams.scrapy_loop is deprecated: use streams.scrapy.NeardupFrontier and "
              "streams.scrapy.NeardupItems in the Scrapy settings", DeprecationWarning, stacklevel=2)

__all__ = ["CANONICAL_FIELD", "LoopOptions", "NeardupFrontier", "NeardupItems", "read_loop_settings"]
