"""rocketmq-py: broker package."""
