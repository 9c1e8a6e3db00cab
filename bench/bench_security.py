"""What ACL and TLS cost the broker: sends/s with ACL on (every request's signature checked) and off, with
TLS on and off, 16 and 64 senders, the configurations interleaved (A B C A B C ...) in one run.

Each configuration runs its own bin/mqbroker (ACL and TLS are start-up settings) driven by the raw
sender processes of bench/broker_load.py (precomputed frames; with ACL each sender signs its header
once, the broker verifies every request). Prints per round and the medians per configuration, plus
the broker's CPU per message (less distorted by a shared machine than the throughput) and the senders'
(they share the machine's cores with the broker: their TLS work lowers the throughput too). Never asserts.

    .venv/bin/python bench/bench_security.py [--seconds 4] [--procs 2] [--rounds 2] [--body 1024] [--configs plain,acl,tls]
                                             [--lockstep]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import orjson  # noqa: E402

from bench.bench_broker import cpu_times, send_round, start_broker, stop_broker  # noqa: E402

#: senders per round; with --lockstep, requests per write (one connection)
SIZES = {False: (16, 64), True: (4, 16)}
WINDOW = 0.5  # seconds per CPU reading in --lockstep (50 clock ticks)

ACL_YML = """accounts:
  - accessKey: benchuser
    secretKey: benchsecret
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
  - accessKey: benchadmin
    secretKey: benchsecret
    admin: true
"""


def make_cert(workdir: str) -> tuple[str, str]:
    cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=60)
    return cert, key


def lockstep(addr: str, topic: str, k: int, seconds: float, max_rounds: int, body_size: int, broker_pid: int) -> dict:
    """One connection sending ``k`` frames in one write and waiting for all ``k`` answers, again and again:
    the broker sees reads of ``k`` requests however loaded the machine is (CPU per message then compares
    configurations at one batch size, which the free-running senders' varies with the load). The broker's
    CPU is read every ``WINDOW`` seconds: ``windows`` is [(messages, seconds, broker CPU seconds)]."""
    import asyncio

    from bench import broker_load as bl

    async def main() -> dict:
        body = os.urandom(body_size)
        parts = [bl._frame_parts(int(bl.RequestCode.SEND_MESSAGE_V2), bl._signed(bl.send_header(topic, i % 8, "UNIQ_KEY\x01x"),
                                                                                   body)) for i in range(k)]
        loop = asyncio.get_running_loop()
        state = {"buf": bytearray(), "want": 0, "done": None, "errors": 0}

        class P(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                buf = state["buf"]
                buf += data
                pos = 0
                while len(buf) - pos >= 8:
                    length, word = bl._HLEN.unpack_from(buf, pos)
                    if len(buf) - pos - 4 < length:
                        break
                    if orjson.loads(bytes(buf[pos + 8:pos + 8 + (word & 0xFFFFFF)]))["code"] not in bl.STORED:
                        state["errors"] += 1
                    pos += 4 + length
                    state["want"] -= 1
                del buf[:pos]
                if state["want"] == 0 and not state["done"].done():
                    state["done"].set_result(None)

        host, port = addr.rsplit(":", 1)
        transport, _ = await loop.create_connection(P, host, int(port), **bl._tls())
        opaque, rounds, t0 = 0, 0, time.monotonic()
        windows, mark, cpu_mark = [], (0, t0), sum(cpu_times(broker_pid))
        while rounds < max_rounds and time.monotonic() - t0 < seconds:
            now = time.monotonic()
            if now - mark[1] >= WINDOW:
                cpu = sum(cpu_times(broker_pid))
                windows.append(((rounds - mark[0]) * k, now - mark[1], cpu - cpu_mark))
                mark, cpu_mark = (rounds, now), cpu
            frames = []
            for head, tail in parts:
                opaque += 1
                h = head + str(opaque).encode() + tail
                frames.append(bl._PREFIX.pack(4 + len(h) + len(body), len(h)) + h + body)
            state["want"], state["done"] = k, loop.create_future()
            transport.write(b"".join(frames))  # one write: one TLS record on TLS
            await asyncio.wait_for(state["done"], 10)
            rounds += 1
        transport.close()
        return {"msgs": rounds * k - state["errors"], "elapsed": time.monotonic() - t0, "errors": state["errors"],
                "windows": windows}

    loop = bl._loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def lockstep_round(pool, addr: str, k: int, args, broker_pid: int) -> dict:
    """The broker's CPU per message in the least loaded window of the round (other work on a shared machine
    only ever inflates it), less what the broker spends idle (its timers and service threads, measured for a
    second before): at a low rate that share would otherwise dominate the CPU per message."""
    u0, s0 = cpu_times(broker_pid)
    time.sleep(1.0)
    u1, s1 = cpu_times(broker_pid)
    idle_rate = (u1 - u0) + (s1 - s0)
    r = pool.apply(lockstep, (addr, "BenchTopic", k, args.seconds, 200_000, args.body, broker_pid))
    per_msg = min(((cpu - idle_rate * dt) / max(n, 1) for n, dt, cpu in r["windows"]), default=float("nan"))
    return {**r, "broker_cpu": max(per_msg, 0.0) * r["msgs"], "client_cpu": 0.0, "p50": 0.0, "p99": 0.0,
            "codes": {}}


def run_config(name: str, args, cert_key: tuple[str, str] | None) -> dict[int, dict]:
    workdir = tempfile.mkdtemp(prefix=f"bench-sec-{name}-")
    extra: dict[str, str] = {}
    env = {**os.environ, "PYTHONPATH": ROOT}
    client_env: dict[str, str] = {}
    if name == "acl":
        home = os.path.join(workdir, "home")
        os.makedirs(os.path.join(home, "conf"))
        with open(os.path.join(home, "conf", "plain_acl.yml"), "w") as f:
            f.write(ACL_YML)
        extra.update(aclEnable="true", rocketmqHome=home)
        env["ROCKETMQ_HOME"] = home
        client_env = {"BENCH_ACCESS_KEY": "benchuser", "BENCH_SECRET_KEY": "benchsecret"}
    elif name == "tls":
        cert, key = cert_key
        extra.update({"tls.server.mode": "enforcing", "tls.server.certPath": cert, "tls.server.keyPath": key})
        client_env = {"BENCH_TLS": "1"}
    broker, port, _ = start_broker(workdir, "ASYNC_FLUSH", extra, env=env)
    addr = f"127.0.0.1:{port}"
    out: dict[int, dict] = {}
    old = {k: os.environ.get(k) for k in ("BENCH_ACCESS_KEY", "BENCH_SECRET_KEY", "BENCH_TLS")}
    try:
        _create_topic(addr, tls=name == "tls", signed=name == "acl")
        os.environ.update(client_env)
        with mp.get_context("fork").Pool(args.procs) as pool:  # forked after the env is set
            for senders in SIZES[args.lockstep]:
                if args.lockstep:  # "senders" is the requests per write then
                    out[senders] = lockstep_round(pool, addr, senders, args, broker.pid)
                    continue
                out[senders] = send_round(pool, addr, "BenchTopic", senders, args.procs, args.seconds, args.body,
                                          1, 8, 2_000_000, broker.pid)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        stop_broker(broker)
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def _create_topic(addr: str, tls: bool, signed: bool) -> None:
    import asyncio

    from client.acl import AclClientRPCHook, SessionCredentials
    from remoting.client import RemotingClient
    from remoting.codes import RequestCode
    from remoting.command import RemotingCommand
    from remoting.tls import TlsSystemConfig

    async def go():
        async with RemotingClient(ssl_context=TlsSystemConfig().client_context() if tls else None) as c:
            h = {"topic": "BenchTopic", "defaultTopic": "TBW102", "readQueueNums": 8, "writeQueueNums": 8,
                 "perm": 6, "topicFilterType": "SINGLE_TAG", "order": "false"}
            cmd = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h)
            if signed:
                AclClientRPCHook(SessionCredentials("benchadmin", "benchsecret")).do_before_request(addr, cmd)
            r = await c.invoke(addr, cmd, 5)
            assert r.code == 0, r.remark

    asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="times each configuration runs (interleaved)")
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--configs", default="plain,acl,tls", help="which of plain,acl,tls to run (plain always runs)")
    ap.add_argument("--lockstep", action="store_true",
                    help="one connection writing 4 (then 16) requests at a time and waiting for their answers, "
                         "instead of 16 and 64 free-running senders: the broker's CPU per message at a fixed batch")
    args = ap.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    work = tempfile.mkdtemp(prefix="bench-sec-certs-")
    cert_key = make_cert(work) if shutil.which("openssl") else None
    wanted = set(args.configs.split(","))
    configs = ["plain"] + [c for c in ("acl", "tls") if c in wanted and (c != "tls" or cert_key)]
    results: dict[tuple[str, int], list[dict]] = {}
    unit = "per write" if args.lockstep else "senders"
    try:
        for rnd in range(args.rounds):
            for name in configs:
                for senders, r in run_config(name, args, cert_key).items():
                    results.setdefault((name, senders), []).append(r)
                    print(f"round {rnd + 1} {name:5s} {senders:3d} {unit}: {r['msgs'] / r['elapsed']:8.0f} msgs/s  "
                          f"p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms  errors {r['errors']} {r['codes'] or ''}  "
                          f"broker CPU {r['broker_cpu'] / max(r['msgs'], 1) * 1e6:.1f} us/msg  "
                          f"clients {r['client_cpu'] / max(r['msgs'], 1) * 1e6:.1f} us/msg", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("medians:")
    for senders in SIZES[args.lockstep]:
        base = statistics.median(r["msgs"] / r["elapsed"] for r in results[("plain", senders)])
        base_cpu = statistics.median(r["broker_cpu"] / max(r["msgs"], 1) for r in results[("plain", senders)])
        for name in configs:
            rs = results[(name, senders)]
            rate = statistics.median(r["msgs"] / r["elapsed"] for r in rs)
            cpu = statistics.median(r["broker_cpu"] / max(r["msgs"], 1) for r in rs)
            client = statistics.median(r["client_cpu"] / max(r["msgs"], 1) for r in rs)
            print(f"  {name:5s} {senders:3d} {unit}: {rate:8.0f} msgs/s ({(rate / base - 1) * 100:+.1f}% vs plain)  "
                  f"broker CPU {cpu * 1e6:.1f} us/msg ({(cpu / base_cpu - 1) * 100:+.1f}%)  "
                  f"clients {client * 1e6:.1f} us/msg")


if __name__ == "__main__":
    main()
