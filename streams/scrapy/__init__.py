"""The Scrapy integration (`neardup[scrapy]`), configured by these paths in a Scrapy project's settings::

    EXTENSIONS = {"streams.scrapy.NeardupPublisher": 500}            # kafka mode: HTML responses to pages.fetched
    DOWNLOADER_MIDDLEWARES = {"streams.scrapy.NeardupFrontier": 590}  # the host signals applied before a fetch
    SPIDER_MIDDLEWARES = {"streams.scrapy.NeardupItems": 590}         # the items of duplicate pages dropped or marked

`publisher` publishes a crawl's pages; `options` reads the loop's settings; `sources` gets decisions and
host signals back (embedded, or from the topics); `middlewares` holds the two middlewares (docs/scrapy.md).
The middlewares' old path, `streams.scrapy_loop`, still works and warns that it moved.
"""

from streams.scrapy.middlewares import NeardupFrontier, NeardupItems
from streams.scrapy.options import CANONICAL_FIELD, LoopOptions, read_loop_settings
from streams.scrapy.publisher import NeardupPublisher, PagePublisher, PublisherOptions, page_event, read_settings
from streams.scrapy.sources import EmbeddedSource, KafkaSource

__all__ = ["CANONICAL_FIELD", "EmbeddedSource", "KafkaSource", "LoopOptions", "NeardupFrontier", "NeardupItems",
           "NeardupPublisher", "PagePublisher", "PublisherOptions", "page_event", "read_loop_settings",
           "read_settings"]
