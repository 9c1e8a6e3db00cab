"""Child process for test_interop_cpp: the official RocketMQ C++ client sends messages to ADDR.

    cpp_remoting_driver.py ADDR TOPIC COUNT

ADDR serves as both NameServer and broker (the test's RemotingServer). Prints
one JSON line: the send results. Kept in a child so a native crash cannot take
the test runner down.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    from rocketmq.client import Message, Producer

    addr, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    producer = Producer("remoting-interop-producer")
    producer.set_namesrv_addr(addr)
    producer.set_timeout(5000)
    producer.start()
    results = []
    try:
        for i in range(count):
            m = Message(topic)
            m.set_tags("TagA")
            m.set_keys(f"key-{i}")
            m.set_body(f"body-{i}-ünï".encode())
            r = producer.send_sync(m)
            results.append({"status": int(r.status), "msg_id": r.msg_id, "offset": r.offset})
    finally:
        producer.shutdown()
    print(json.dumps({"results": results}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
