"""Kafka beyond the sink: shared client settings, offsets and schema history in topics, signals."""
