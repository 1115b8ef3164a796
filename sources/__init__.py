"""Log bytes in: files, directories (recursively), gzip/zstd files and stdin in chunks, and the data a LogShard
carries. No transport: both the scan engine and the Kafka/HTTP ingest read through it."""
