"""Message trace in RocketMQ 4.x's format: records, the async dispatcher, hooks and the query."""
