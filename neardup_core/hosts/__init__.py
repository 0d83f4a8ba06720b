"""Per-host signals for the crawl frontier: URL shapes, duplicate statistics and penalties, URL-rule learning."""
