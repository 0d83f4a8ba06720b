"""One fetched page in, one fingerprinted page out: features, SimHash, digests."""
