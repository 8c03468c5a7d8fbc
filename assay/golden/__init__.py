"""The golden file: its model, JSON and JSONL format, JSON Schema, TREC files, diffs, durable keys."""
