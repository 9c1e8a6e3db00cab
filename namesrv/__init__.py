"""rocketmq-py: namesrv package."""
