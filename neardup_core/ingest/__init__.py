"""The input: the fetched-page event and its validation, charset decoding, JSONL and WARC readers."""
