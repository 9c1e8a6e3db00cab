"""Spark connector benchmark: the "rocketmq" batch source and sink against the plain Python client.

Prints (never asserts), on a local SparkSession (``--master``, default local[2]) and a
real bin/mqnamesrv + bin/mqbroker on loopback, ``--messages`` messages of ``--size`` bytes:

* client read: the client library's LitePullConsumer draining the backlog of a 4-queue
  topic in one process (pullBatchSize 32);
* client read, 2 processes: the fair reference for local[2] (one client process per executor
  core): two processes started together, each a LitePullConsumer assigned half of the queues
  (same pullBatchSize), draining the 2- and the 4-queue topic; their aggregate messages/s
  (all messages over the span from the first start to the last finish);
* source read: ``spark.read.format("rocketmq")`` over topics of 2 and 4 queues (one
  partition per queue), materialising every row (sum of body lengths);
* client batch send: Producer.send_batch of 64 messages, and of as many as the sink's default
  batch holds (sendBatchBytes 256 KiB), 4 batches in flight, one process;
* sink: ``df.write.format("rocketmq")`` of a 2-partition DataFrame (each task: its default
  byte-sized batches, 4 in flight).

With each figure, the CPU time it cost per message (µs, median over the rounds) in the Spark JVM,
the Python workers (the connector's tasks), the client process(es) and the broker, read from
/proc: on a machine this small, whoever spends the CPU sets the rate.

After one warm-up read and write (the first queries start Spark's Python workers), ``--reps``
rounds each measure all six back to back; figures are medians over the rounds, and the
connector's share of the client's rate is the median of the rounds' ratios (the load of a
shared machine drifts between rounds, less within one). Every client run is bounded by
``--timeout`` seconds.

Each Spark query also has a fixed cost (planning a Python data source in a separate Python process,
code generation, task start-up: ~0.2-0.4 s, printed last, measured on a tiny read and write). With
a small backlog it dominates the rate (20 000 messages: the source at ~40 000 msg/s, the JVM at
~30 µs/msg); the default backlog, 300 000 messages, keeps it to a few percent of a read.

    .venv/bin/python bench/bench_spark.py [--messages 300000] [--size 1024] [--reps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin")
sys.path.insert(0, ROOT)

from bench.bench_client import free_port, wait_port  # noqa: E402
from client.client_config import ClientConfig  # noqa: E402
from client.consumer_common import ConsumeFromWhere  # noqa: E402
from client.lite_pull_consumer import LitePullConsumer  # noqa: E402
from client.message import Message, MessageQueue  # noqa: E402
from client.producer import Producer  # noqa: E402
from remoting import run as run_loop  # noqa: E402


async def create_topic(ns: str, broker: str, topic: str, queues: int) -> None:
    from client.admin import MQAdmin
    from remoting.body.topic_config import TopicConfig

    async with MQAdmin(ns) as admin:
        await admin.create_topic(broker, TopicConfig(topicName=topic, readQueueNums=queues, writeQueueNums=queues))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                await admin.topic_route(topic)
                return
            except Exception:
                await asyncio.sleep(0.1)
        raise SystemExit(f"no route for {topic}")


async def batch_send(ns: str, topic: str, n: int, size: int, timeout: float, per: int = 64) -> float:
    """Producer.send_batch, ``per`` messages per batch, 4 in flight; returns messages/s."""
    body = b"x" * size
    async with Producer("bench_spark_pg", config=ClientConfig(namesrv_addr=ns, instance_name=f"bs{time.time_ns()}"),
                        batch_sends_under_load=False) as p:
        slots = asyncio.Semaphore(4)

        async def one(k: int) -> None:
            try:
                await p.send_batch([Message(topic, body) for _ in range(k)])
            finally:
                slots.release()

        t0 = time.perf_counter()
        tasks = []
        for start in range(0, n, per):
            await slots.acquire()
            tasks.append(asyncio.ensure_future(one(min(per, n - start))))
            if time.perf_counter() - t0 > timeout:
                break
        await asyncio.gather(*tasks)
        return sum(min(per, n - s) for s in range(0, n, per)[: len(tasks)]) / (time.perf_counter() - t0)


async def client_read(ns: str, topic: str, n: int, timeout: float) -> float:
    """LitePullConsumer draining ``n`` messages from the first offset; returns messages/s."""
    c = LitePullConsumer(f"bench_spark_reader_{time.time_ns()}", ns, pull_batch_size=32,
                         consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, auto_commit=False)
    c.subscribe(topic)
    await c.start()
    try:
        got = 0
        t0 = time.perf_counter()
        while got < n and time.perf_counter() - t0 < timeout:
            got += sum(len(m.body) > 0 for m in await c.poll(1.0))
        return got / (time.perf_counter() - t0)
    finally:
        await c.shutdown()


def _drain(ns: str, mqs: list[MessageQueue], expect: int, batch: int,
           timeout: float) -> tuple[float, float, int, float]:
    """One child's share: a LitePullConsumer assigned ``mqs`` drains ``expect`` messages;
    (start, end, got, CPU seconds of the child in between)."""

    async def go() -> tuple[float, float, int, float]:
        c = LitePullConsumer(f"bench_spark_drain_{os.getpid()}_{time.time_ns()}", ns, pull_batch_size=batch,
                             consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, auto_commit=False)
        c.assign(mqs)
        t0 = time.perf_counter()  # CLOCK_MONOTONIC: comparable between the processes
        c0 = time.process_time()
        await c.start()
        try:
            got = 0
            while got < expect and time.perf_counter() - t0 < timeout:
                got += len(await c.poll(1.0))
            return t0, time.perf_counter(), got, time.process_time() - c0
        finally:
            await c.shutdown()

    return run_loop(go())


def _drain_child(args: tuple, barrier, results) -> None:
    barrier.wait(120)
    results.put(_drain(*args))


def parallel_read(ns: str, topic: str, procs: int, batch: int, timeout: float) -> tuple[float, float]:
    """``procs`` client processes started together, each draining its share of the queues:
    (aggregate msg/s, their CPU seconds while draining)."""
    from connectors.spark.topic_metadata import TopicMetadata

    meta = TopicMetadata(ns)
    try:
        queues = sorted(dict(meta.queues(topic)))
        ends = meta.max_offsets(queues)
    finally:
        meta.close()
    ctx = multiprocessing.get_context("spawn")  # no fork of a process that runs Spark's gateway
    barrier, results = ctx.Barrier(procs), ctx.Queue()
    children = []
    for k in range(procs):
        mine = queues[k::procs]
        mqs = [MessageQueue(t, b, q) for t, b, q in mine]
        args = (ns, mqs, sum(ends[q] for q in mine), batch, timeout)
        children.append(ctx.Process(target=_drain_child, args=(args, barrier, results), daemon=True))
    for c in children:
        c.start()
    try:
        spans = [results.get(timeout=timeout + 180) for _ in children]
    finally:
        for c in children:
            c.join(30)
    rate = sum(got for _, _, got, _ in spans) / (max(e for _, e, _, _ in spans) - min(s for s, _, _, _ in spans))
    return rate, sum(c for *_, c in spans)


def session(master: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = ROOT
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("bench-spark").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.showConsoleProgress", "false")
             .config("spark.executorEnv.PYTHONPATH", ROOT).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    from connectors.spark import register

    register(spark)
    return spark


def _cpu(pid: int) -> tuple[int, float]:
    """(start time, user + system CPU seconds) of a live process; (0, 0.0) once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0, 0.0
    return int(fields[19]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        return []
    return [k for c in kids for k in (c, *_descendants(c))]


class CpuSplit:
    """CPU seconds spent while a figure is measured by the Spark JVM, its Python workers, this process and
    the broker (client processes of their own report theirs: see ``measure``).

    PySpark's daemon lets the kernel reap the workers it forks (their CPU never reaches its children's
    times), so a thread samples the JVM's process tree every 100 ms and keeps each process's last figure:
    a worker that ends loses at most its last 100 ms (a sample costs ~1 ms: the JVM has ~100 threads).
    """

    def __init__(self, broker_pid: int):
        import threading

        self.broker = broker_pid
        self.jvm = next((p for p in _descendants(os.getpid()) if _is_java(p)), None)
        self._seen: dict[tuple[int, int], float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_loop, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        if self.jvm is None:
            return
        for p in _descendants(self.jvm):
            start, cpu = _cpu(p)
            if start:
                with self._lock:
                    self._seen[(p, start)] = cpu

    def _sample_loop(self) -> None:
        while not self._stop.wait(0.1):
            self._sample()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def snap(self) -> dict:
        self._sample()
        with self._lock:
            seen = dict(self._seen)
        return {"jvm": _cpu(self.jvm)[1] if self.jvm else 0.0, "workers": seen, "broker": _cpu(self.broker)[1],
                "client": time.process_time()}

    @staticmethod
    def delta(a: dict, b: dict) -> dict[str, float]:
        workers = sum(v - a["workers"].get(k, 0.0) for k, v in b["workers"].items())
        return {"jvm": b["jvm"] - a["jvm"], "workers": workers, "client": b["client"] - a["client"],
                "broker": b["broker"] - a["broker"]}


def _is_java(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"java" in f.read().split(b"\0")[0]
    except OSError:
        return False


def timed(fn, n: int) -> float:
    """Messages/s of one run of ``fn`` (which returns how many messages it handled)."""
    t0 = time.perf_counter()
    got = fn()
    rate = got / (time.perf_counter() - t0)
    if got != n:
        print(f"  (a run returned {got} of {n})")
    return rate


def fixed_cost(fn, reps: int) -> float:
    """Median seconds of a query on a handful of messages: Spark's per-query overhead."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=300000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-spark-")
    ns_port, b_port = free_port(), free_port()
    with open(os.path.join(tmp, "ns.conf"), "w") as f:
        f.write(f"listenPort={ns_port}\nkvConfigPath={tmp}/kv.json\nconfigStorePath={tmp}/ns.properties\n")
    with open(os.path.join(tmp, "b.conf"), "w") as f:
        f.write(f"brokerClusterName=BenchCluster\nbrokerName=bench\nlistenPort={b_port}\nbrokerIP1=127.0.0.1\n"
                f"namesrvAddr=127.0.0.1:{ns_port}\nstorePathRootDir={tmp}/store\n"
                f"mappedFileSizeCommitLog={256 * 1024 * 1024}\n")
    logs = open(os.path.join(tmp, "servers.log"), "wb")
    procs = [subprocess.Popen([os.path.join(BIN, "mqnamesrv"), "-c", f"{tmp}/ns.conf"], stdout=logs, stderr=logs)]
    try:
        wait_port(ns_port, procs[0])
        procs.append(subprocess.Popen([os.path.join(BIN, "mqbroker"), "-c", f"{tmp}/b.conf"], stdout=logs, stderr=logs))
        wait_port(b_port, procs[1])
        ns, broker = f"127.0.0.1:{ns_port}", f"127.0.0.1:{b_port}"
        n, size = a.messages, a.size
        print(f"spark connector benchmark: {n} messages of {a.size} B, master {a.master}, {os.cpu_count()} CPUs "
              "(broker, Spark and Python workers share them)")
        for q in (2, 4):
            run_loop(create_topic(ns, broker, f"BenchSpark{q}", q))
        run_loop(create_topic(ns, broker, "BenchSparkSink", 4))
        rates = [run_loop(batch_send(ns, f"BenchSpark{q}", n, size, a.timeout)) for q in (2, 4)]
        print(f"client batch send (fill):      {statistics.median(rates):9.0f} msg/s")
        spark = session(a.master)
        from pyspark.sql import functions as F

        def read(q: int) -> int:
            df = spark.read.format("rocketmq").option("nameServer", ns).option("subscribe", f"BenchSpark{q}").load()
            return int(df.agg(F.count("body"), F.sum(F.length("body"))).collect()[0][0])

        # the sink's default batches: sendBatchBytes 256 KiB, 63 B of entry head and UNIQ_KEY per message
        per = max(1, min(1024, 256 * 1024 // (size + 63)))
        df = spark.range(n, numPartitions=2).select(F.expr(f"repeat('x', {size})").alias("body")).cache()
        df.count()

        def write() -> int:
            df.write.format("rocketmq").option("nameServer", ns).option("topic", "BenchSparkSink").mode("append").save()
            return n

        # warm-up (the first queries start Spark's Python workers), then rounds that measure the client
        # and the connector back to back: the machine's load drifts, a round's ratio is paired
        timed(lambda: read(2), n)
        timed(write, n)
        keys = ("cread", "cpar2", "cpar4", "src2", "src4", "c64", "cbig", "sink")
        figs: dict[str, list[float]] = {k: [] for k in keys}
        split = CpuSplit(procs[1].pid)
        cpu: dict[str, list[dict[str, float]]] = {k: [] for k in keys}

        def measure(key: str, fn) -> None:
            """``fn`` returns msg/s, or (msg/s, CPU seconds of client processes of its own)."""
            before = split.snap()
            got = fn()
            rate, own = got if isinstance(got, tuple) else (got, 0.0)
            figs[key].append(rate)
            d = split.delta(before, split.snap())
            d["client"] += own
            cpu[key].append(d)

        for _ in range(a.reps):
            measure("cread", lambda: run_loop(client_read(ns, "BenchSpark4", n, a.timeout)))
            measure("cpar2", lambda: parallel_read(ns, "BenchSpark2", 2, 32, a.timeout))
            measure("cpar4", lambda: parallel_read(ns, "BenchSpark4", 2, 32, a.timeout))
            measure("src2", lambda: timed(lambda: read(2), n))
            measure("src4", lambda: timed(lambda: read(4), n))
            measure("c64", lambda: run_loop(batch_send(ns, "BenchSparkSink", n, size, a.timeout)))
            measure("cbig", lambda: run_loop(batch_send(ns, "BenchSparkSink", n, size, a.timeout, per)))
            measure("sink", lambda: timed(write, n))

        def line(label: str, key: str, base: str | None = None, what: str = "") -> None:
            runs = figs[key]
            if base is not None:
                ratios = [x / y for x, y in zip(runs, figs[base], strict=True)]
                print(f"  = {100 * statistics.median(ratios):.0f} % of {what} (median of the rounds' ratios "
                      f"{[round(100 * r) for r in ratios]})")
                return
            text = f"{label:<31}{statistics.median(runs):9.0f} msg/s  runs {[round(r) for r in runs]}"
            parts = [(k, statistics.median(c[k] for c in cpu[key]) * 1e6 / n) for k in ("jvm", "workers", "client",
                                                                                       "broker")]
            print(text + "  CPU us/msg: " + ", ".join(f"{k} {v:.1f}" for k, v in parts if v >= 0.05))

        line("client read, 1 process:", "cread")
        line("client read, 2 proc, 2 queues:", "cpar2")
        line("client read, 2 proc, 4 queues:", "cpar4")
        line("source read, 2 partitions:", "src2")
        line("source read, 2 partitions:", "src2", "cread", "the client read")
        line("source read, 2 partitions:", "src2", "cpar2", "2 client processes")
        line("source read, 4 partitions:", "src4")
        line("source read, 4 partitions:", "src4", "cread", "the client read")
        line("source read, 4 partitions:", "src4", "cpar4", "2 client processes")
        line("client batch send, 64/batch:", "c64")
        line(f"client batch send, {per}/batch:", "cbig")
        line("sink, 2 partitions:", "sink")
        line("sink, 2 partitions:", "sink", "c64", "the client's send of 64")
        line("sink, 2 partitions:", "sink", "cbig", f"the client's send of {per}")

        import json

        def tiny_read() -> int:
            ends = json.dumps({"BenchSpark4": {"bench": {str(q): 1 for q in range(4)}}})
            return spark.read.format("rocketmq").option("nameServer", ns).option("subscribe", "BenchSpark4") \
                .option("endingOffsets", ends).load().count()

        fixed_read = fixed_cost(tiny_read, a.reps)
        print(f"  per-query cost of a 4-message read: {fixed_read:.2f} s (planning in a Python planner process, "
              "task start-up)")
        two = spark.createDataFrame([("a",), ("b",)], "body string").coalesce(2)

        def tiny_write() -> int:
            two.write.format("rocketmq").option("nameServer", ns).option("topic", "BenchSparkSink").mode("append").save()
            return 2

        fixed_write = fixed_cost(tiny_write, a.reps)
        print(f"  per-query cost of a 2-message write: {fixed_write:.2f} s")
        split.close()
        spark.stop()
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        logs.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
