"""Where the index lives: the store interface (bounded prefix scans) and its memory and RocksDB backends."""
