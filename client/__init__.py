"""rocketmq-py: client package."""
