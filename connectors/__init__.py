"""Connectors from rocketmq-py to data engines (``connectors.spark``: PySpark data sources).

Connectors sit beside the client: they use common, remoting, client and the
store's file readers, and nothing in the project imports them.
"""
