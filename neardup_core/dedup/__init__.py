"""The decision: page versions and their rank, the rule, per-URL state, and the single-node engine."""
