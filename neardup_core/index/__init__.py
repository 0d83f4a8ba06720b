"""The near and exact tables: pigeonhole designs, key encodings, and the bucket step."""
