"""A whole RocketMQ cluster inside a Python process (see embedded.cluster), and its pytest plugin."""

from embedded.cluster import EmbeddedBroker, EmbeddedCluster

__all__ = ["EmbeddedCluster", "EmbeddedBroker"]
