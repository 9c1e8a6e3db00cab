"""rocketmq-py: tools package."""
