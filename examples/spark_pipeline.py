"""A streaming pipeline on Spark: a topic in, message counts per tag per minute out to another topic,
the raw rows to Parquet.

Against ``make run`` (NameServer on 127.0.0.1:9876), in one command:

    .venv/bin/python examples/spark_pipeline.py --demo 500 --once

``--demo N`` first sends N messages with a few tags; ``--once`` processes what
is there (Trigger.AvailableNow) and exits, otherwise the queries run until
Ctrl-C. Counts arrive in ``--counts-topic`` as JSON bodies tagged with the
counted tag; raw rows land in ``--out/raw`` (Parquet). See docs/spark.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def send_demo(namesrv: str, topic: str, count: int) -> None:
    from client.blocking import BlockingProducer
    from client.message import Message

    tags = ["order", "payment", "refund", "shipment"]
    producer = BlockingProducer("spark_pipeline_demo", namesrv)
    producer.start()
    try:
        for start in range(0, count, 32):
            batch = [Message(topic, f"event {i}".encode(), tags=tags[i % len(tags)], keys=f"id-{i}")
                     for i in range(start, min(count, start + 32))]
            producer.send_batch(batch)
    finally:
        producer.shutdown()
    print(f"sent {count} demo messages to {topic}")


def build_session():
    # Python workers import the connector by package name: give them this checkout and this interpreter
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.abspath(ROOT), os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("rocketmq-spark-pipeline")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    from connectors.spark import register

    register(spark)
    return spark


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--namesrv", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    ap.add_argument("--topic", default="SparkPipelineEvents")
    ap.add_argument("--counts-topic", default="SparkPipelineCounts")
    ap.add_argument("--group", default="spark_pipeline", help="consumer group that shows the job's progress")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "rocketmq-spark-pipeline"))
    ap.add_argument("--demo", type=int, default=0, help="send this many demo messages first")
    ap.add_argument("--once", action="store_true", help="process what is there now and exit (AvailableNow)")
    args = ap.parse_args(argv)

    if args.demo:
        send_demo(args.namesrv, args.topic, args.demo)
    spark = build_session()
    from pyspark.sql import functions as F

    events = (spark.readStream.format("rocketmq").option("nameServer", args.namesrv)
              .option("subscribe", args.topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "10000").option("group", args.group).load())

    def trigger(writer):
        return writer.trigger(availableNow=True) if args.once else writer.trigger(processingTime="5 seconds")

    raw = trigger(events.writeStream.format("parquet").option("path", os.path.join(args.out, "raw"))
                  .option("checkpointLocation", os.path.join(args.out, "checkpoints", "raw"))).start()

    def publish_counts(batch, batch_id: int) -> None:
        # per micro-batch: counts per (minute, tag), sent to the counts topic tagged with the tag
        counts = (batch.groupBy(F.window("storeTimestamp", "1 minute").alias("w"), F.col("tags")).count()
                  .select(F.to_json(F.struct(F.col("w.start").alias("minute"), F.col("tags").alias("tag"),
                                             F.col("count"), F.lit(batch_id).alias("batch"))).alias("body"),
                          F.coalesce(F.col("tags"), F.lit("none")).alias("tags"))).persist()
        counts.write.format("rocketmq").option("nameServer", args.namesrv).option("topic", args.counts_topic) \
            .mode("append").save()
        for row in counts.collect():
            print("count", row.body)
        counts.unpersist()

    counted = trigger(events.writeStream.foreachBatch(publish_counts)
                      .option("checkpointLocation", os.path.join(args.out, "checkpoints", "counts"))).start()
    try:
        raw.awaitTermination()
        counted.awaitTermination()
    except KeyboardInterrupt:
        raw.stop()
        counted.stop()
    rows = spark.read.parquet(os.path.join(args.out, "raw")).count()
    print(f"raw rows in {os.path.join(args.out, 'raw')}: {rows}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
