"""rocketmq-py: store package."""
