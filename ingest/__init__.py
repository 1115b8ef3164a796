"""Getting logs in over the wire: the Kafka consumer and producer, wire validation, dead letters and `firstfault
ship`. Reading files and decoding a shard's data is sources/, below this, so the pipeline and the scan engine
need nothing from here."""
