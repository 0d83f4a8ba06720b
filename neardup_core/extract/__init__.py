"""Main-content extraction: jusText's semantics on a fast parser, and the stoplist choice."""
