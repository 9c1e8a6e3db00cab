"""The schemas of the connector's DataFrames, as DDL strings (no pyspark import needed).

Tasks build their rows as Arrow batches (:mod:`connectors.spark.arrow_rows`).
"""

from __future__ import annotations

__all__ = ["TOPIC_SCHEMA", "STORE_SCHEMA"]

TOPIC_SCHEMA = (
    "topic string, broker string, queueId int, queueOffset long, msgId string, tags string, "
    "keys array<string>, body binary, bornTimestamp timestamp, storeTimestamp timestamp, bornHost string, "
    "reconsumeTimes int, properties map<string,string>"
)
STORE_SCHEMA = TOPIC_SCHEMA + ", physicalOffset long, sysFlag int, bodyCRC int, crcOk boolean"
