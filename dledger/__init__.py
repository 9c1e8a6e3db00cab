"""rocketmq-py: dledger package."""
