"""rocketmq-py: remoting package."""
