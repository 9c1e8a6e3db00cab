"""rocketmq-py: common package."""
