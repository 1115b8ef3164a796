"""Getting logs in: files, directories and stdin here; Kafka and HTTP ingest in their own modules."""
