"""The record codec's two twins (common.record_codec, pure, and common._speedups, compiled) against
each other and against an independent reference.

The reference below is written from the field table of message-and-store-format.md §2 with
plain ``struct.unpack_from``, one field after the other; it imports no project parser. Both
twins' ``parse_record`` / ``walk_records`` and the full decoder (``decode_record`` behind
``decode_message``) must read what it reads, on records written by our store (IPv4 and IPv6
hosts, empty and 32767-byte properties, batches), on the golden RocketMQ 4.9.7 store, on
hand-built v1 and v2 records, and must agree on corrupt bytes.
"""

from __future__ import annotations

import base64
import json
import random
import socket
import struct
import zlib

import pytest

from common import record_codec, speedups
from common.errors import RecordDecodeError
from common.message import MessageExtBatch, MessageExtBrokerInner, decode_message, encode_batch_body
from store.commit_log import CommitLog
from store.config import MessageStoreConfig

TWINS = [pytest.param(speedups.pure, id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param(speedups.compiled, id="compiled"))
needs_compiled = pytest.mark.skipif(speedups.compiled is None, reason="common._speedups not built")

V1 = -626843481  # 0xDAA320A7
V2 = -626843477  # 0xDAA320AB
BLANK = -875286124  # 0xCBD43194


# -- the reference, from the spec's field table ------------------------------------------------------


def ref_host(buf, p: int, v6: bool) -> tuple[str, int, int]:
    """(address text, port, next position) of a BORNHOST / STOREHOST field."""
    n = 16 if v6 else 4
    addr = socket.inet_ntop(socket.AF_INET6 if v6 else socket.AF_INET, bytes(buf[p : p + n]))
    return addr, struct.unpack_from(">i", buf, p + n)[0], p + n + 4


def ref_props(text: str) -> dict[str, str]:
    """string2messageProperties: NAME\\x01VALUE entries joined by \\x02, both non-empty, last one wins."""
    out = {}
    for item in text.split("\x02"):
        if "\x01" in item:
            k, v = item.split("\x01", 1)
            if k and v:
                out[k] = v
    return out


def ref_parse(buf, pos: int, strict: bool = False):
    """One record field by field: "blank", None when the bytes are not a record, else a dict."""
    if len(buf) - pos < 8:
        return None
    total, magic = struct.unpack_from(">ii", buf, pos)
    if magic == BLANK:
        return "blank"
    if magic not in (V1, V2) or total < 91 or pos + total > len(buf):
        return None
    end = pos + total
    r = dict(zip(("totalSize", "magicCode", "bodyCRC", "queueId", "flag", "queueOffset", "physicalOffset", "sysFlag",
                  "bornTimestamp"), struct.unpack_from(">iiiiiqqiq", buf, pos), strict=True))
    p = pos + 48
    born_v6, store_v6 = bool(r["sysFlag"] & 0x10), bool(r["sysFlag"] & 0x20)
    if p + (20 if born_v6 else 8) + 8 + (20 if store_v6 else 8) + 16 > end:
        return None
    r["bornHost"], r["bornPort"], p = ref_host(buf, p, born_v6)
    r["storeTimestamp"] = struct.unpack_from(">q", buf, p)[0]
    r["storeHost"], r["storePort"], p = ref_host(buf, p + 8, store_v6)
    r["reconsumeTimes"], r["preparedTransactionOffset"], blen = struct.unpack_from(">iqi", buf, p)
    p += 16
    if blen < 0 or p + blen > end:
        return None
    r["body"] = bytes(buf[p : p + blen])
    p += blen
    if magic == V1:
        if p + 1 > end:
            return None
        tlen = buf[p]
        p += 1
    else:
        if p + 2 > end:
            return None
        tlen = struct.unpack_from(">h", buf, p)[0]
        p += 2
    if tlen <= 0 or p + tlen + 2 > end:
        return None
    topic = bytes(buf[p : p + tlen])
    p += tlen
    plen = struct.unpack_from(">H", buf, p)[0]
    p += 2
    if p + plen != end:
        return None
    props = bytes(buf[p:end])
    if strict and (b"\x00" in topic or b"\x00" in props):
        return None
    try:
        r["topic"] = topic.decode("utf-8")
    except UnicodeDecodeError:
        return None
    r["propertiesRaw"] = props
    r["properties"] = ref_props(props.decode("utf-8", "replace"))
    return r


def ref_walk(buf, base: int, check_crc: bool) -> tuple[int, int, bool]:
    """Recovery's walk of one file with the reference: (end, records, stopped at BLANK)."""
    pos = count = 0
    while True:
        r = ref_parse(buf, pos, True)
        if r is None:
            return pos, count, False
        if r == "blank":
            return pos, count, True
        if r["physicalOffset"] != base + pos:
            return pos, count, False
        if check_crc and zlib.crc32(r["body"]) & 0x7FFFFFFF != r["bodyCRC"]:
            return pos, count, False
        count += 1
        pos += r["totalSize"]


def project(buf, t):
    """A parse_record tuple in the reference's terms (the fields it carries)."""
    if t is None:
        return None
    if t[1] == BLANK:
        return "blank"
    props = ref_props(bytes(buf[t[14] : t[14] + t[15]]).decode("utf-8", "replace"))
    assert t[16:] == tuple(props.get(k) for k in ("TAGS", "KEYS", "UNIQ_KEY", "DELAY"))
    return (t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], bytes(buf[t[11] : t[11] + t[12]]),
            t[13], bytes(buf[t[14] : t[14] + t[15]]), props)


def ref_projection(r):
    if r is None or r == "blank":
        return r
    return (r["totalSize"], r["magicCode"], r["bodyCRC"], r["queueId"], r["flag"], r["queueOffset"],
            r["physicalOffset"], r["sysFlag"], r["bornTimestamp"], r["storeTimestamp"],
            r["preparedTransactionOffset"], r["body"], r["topic"], r["propertiesRaw"], r["properties"])


def assert_full_decode_matches(buf, pos: int, r: dict) -> None:
    """decode_message (common.record_codec.decode_record) reads every field the reference reads."""
    m = decode_message(buf, pos)
    assert (m.store_size, m.magic, m.body_crc, m.queue_id, m.flag, m.queue_offset, m.commit_log_offset, m.sys_flag,
            m.born_timestamp, m.store_timestamp, m.reconsume_times, m.prepared_transaction_offset, m.body, m.topic,
            m.properties) == (
        r["totalSize"], r["magicCode"], r["bodyCRC"], r["queueId"], r["flag"], r["queueOffset"], r["physicalOffset"],
        r["sysFlag"], r["bornTimestamp"], r["storeTimestamp"], r["reconsumeTimes"], r["preparedTransactionOffset"],
        r["body"], r["topic"], r["properties"])
    assert m.born_host == (r["bornHost"], r["bornPort"]) and m.store_host == (r["storeHost"], r["storePort"])
    assert m.properties_string.encode() == r["propertiesRaw"]


def check_file(buf, base: int) -> int:
    """Walk one CommitLog file with the reference; both twins and the full decoder must agree at every record."""
    pos = seen = 0
    while True:
        r = ref_parse(buf, pos, True)
        for twin in (speedups.pure, speedups.compiled):
            if twin is not None:
                assert project(buf, twin.parse_record(buf, pos, True)) == ref_projection(r), pos
        if r is None or r == "blank":
            break
        assert_full_decode_matches(buf, pos, r)
        seen += 1
        pos += r["totalSize"]
    for twin in (speedups.pure, speedups.compiled):
        if twin is not None:
            for crc in (False, True):
                assert twin.walk_records(buf, 0, base, crc) == ref_walk(buf, base, crc)
    return seen


# -- an independent encoder (for v2 and hand-made records) --------------------------------------------


def ref_encode(topic: bytes, body: bytes, props: bytes, *, v2: bool = False, born: tuple[str, int] = ("127.0.0.1", 4000),
               store: tuple[str, int] = ("127.0.0.1", 10911), qid: int = 3, flag: int = 5, qoff: int = 77,
               phys: int = 0, sys_flag: int = 0, reconsume: int = 2, prepared: int = 9) -> bytes:
    def host(h):
        v6 = ":" in h[0]
        return socket.inet_pton(socket.AF_INET6 if v6 else socket.AF_INET, h[0]) + struct.pack(">i", h[1]), v6

    born_b, bv6 = host(born)
    store_b, sv6 = host(store)
    sys_flag |= (0x10 if bv6 else 0) | (0x20 if sv6 else 0)
    rest = (struct.pack(">iiqqiq", qid, flag, qoff, phys, sys_flag, 1_700_000_000_000) + born_b
            + struct.pack(">q", 1_700_000_000_500) + store_b + struct.pack(">iqi", reconsume, prepared, len(body)) + body
            + (struct.pack(">h", len(topic)) if v2 else bytes([len(topic)])) + topic + struct.pack(">H", len(props))
            + props)
    return struct.pack(">iii", 12 + len(rest), V2 if v2 else V1, zlib.crc32(body) & 0x7FFFFFFF) + rest


# -- records written by the store ---------------------------------------------------------------------


def store_written(tmp_path) -> list[tuple[bytes, int]]:
    """The files of a CommitLog our store wrote: single puts and batches, IPv4 and IPv6 hosts,
    empty and largest properties."""
    cfg = MessageStoreConfig(storePathRootDir=str(tmp_path), storePathCommitLog=str(tmp_path / "commitlog"),
                             mappedFileSizeCommitLog=256 * 1024)
    cl = CommitLog(cfg)
    assert cl.load()
    hosts = [("127.0.0.1", 40000), ("::1", 40001), ("fe80::1:2", 40002), ("10.1.2.3", 9)]
    big = "K\x01" + "v" * (32767 - 2)
    props = ["", "TAGS\x01t", "TAGS\x01a\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01U\x02DELAY\x013", "ключ\x01значение", big]
    rnd = random.Random(3)
    for i in range(60):
        p = props[i % len(props)]
        m = MessageExtBrokerInner(topic=rnd.choice(["TopicA", "T", "Тема", "x" * 127]), queue_id=i % 4, flag=i - 30,
                                  body=rnd.randbytes(rnd.choice([0, 1, 100, 5000])), properties_string=p,
                                  born_timestamp=1_700_000_000_000 + i, born_host=hosts[i % 4],
                                  store_host=hosts[(i // 4) % 4], reconsume_times=i % 3)
        assert cl.put_message(m).is_ok()
        if i % 7 == 0:
            entries = [type("E", (), {"body": rnd.randbytes(20), "flag": j, "properties": {"KEYS": f"k{j}"}})()
                       for j in range(5)]
            b = MessageExtBatch(topic="BatchTopic", queue_id=1, body=encode_batch_body(entries),
                                properties_string="CLUSTER\x01c", born_host=hosts[i % 4], store_host=hosts[1])
            assert cl.put_messages(b).is_ok()
    out = [(bytes(mf.mm[: mf.file_size]), mf.file_from_offset) for mf in cl.mapped_file_queue.mapped_files]
    cl.shutdown()
    return out


def test_both_twins_and_the_full_decoder_read_what_the_store_wrote(tmp_path):
    files = store_written(tmp_path)
    assert len(files) >= 2  # a BLANK end-of-file record was written and read too
    seen = sum(check_file(buf, base) for buf, base in files)
    assert seen == 60 + 9 * 5


def host_text(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def test_both_twins_read_the_golden_store(golden_store):
    with open(golden_store / "manifest.jsonl", encoding="utf-8") as fh:
        manifest = {r["physicalOffset"]: r for r in map(json.loads, fh)}
    seen = 0
    for f in sorted((golden_store / "store" / "commitlog").iterdir()):
        buf = f.read_bytes()
        base = int(f.name)
        seen += check_file(buf, base)
        pos = 0
        while (r := ref_parse(buf, pos, True)) not in (None, "blank"):
            want = manifest[base + pos]
            assert r["body"] == base64.b64decode(want["body"]) and r["topic"] == want["topic"]
            assert (r["totalSize"], r["queueOffset"], r["sysFlag"], r["storeTimestamp"]) == (
                want["totalSize"], want["queueOffset"], want["sysFlag"], want["storeTimestamp"])
            assert host_text(r["bornHost"], r["bornPort"]) == want["bornHost"]
            assert host_text(r["storeHost"], r["storePort"]) == want["storeHost"]
            assert r["propertiesRaw"].decode() == want["propertiesRaw"]
            pos += r["totalSize"]
    assert seen == len(manifest)


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("born", [("127.0.0.1", 1), ("2001:db8::7", 2)])
@pytest.mark.parametrize("store", [("192.168.0.9", 10911), ("::1", 10912)])
@pytest.mark.parametrize("props", [b"", b"TAGS\x01a\x02KEYS\x01b", b"P\x01" + b"v" * 32765])
def test_hand_built_v1_v2_ipv4_ipv6_records(v2, born, store, props):
    topic = b"t" * (300 if v2 else 127)
    rec = ref_encode(topic, b"body!", props, v2=v2, born=born, store=store, phys=7)
    buf = bytes(7) + rec + struct.pack(">ii", 99, BLANK)
    r = ref_parse(buf, 7)
    assert r["topic"] == topic.decode() and r["propertiesRaw"] == props and r["magicCode"] == (V2 if v2 else V1)
    assert (r["bornHost"], r["storeHost"]) == (born[0], store[0])
    for twin in (speedups.pure, speedups.compiled):
        if twin is not None:
            assert project(buf, twin.parse_record(buf, 7)) == ref_projection(r)
            assert twin.parse_record(buf, 7 + len(rec))[:2] == (99, BLANK)
    assert_full_decode_matches(buf, 7, r)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("born", [("127.0.0.1", 1), ("2001:db8::7", 2)])
@pytest.mark.parametrize("props", [b"", b"TAGS\x01a", b"P\x01" + b"v" * 32765])
def test_write_record_writes_what_the_reference_reads(twin, born, props):
    born_a = socket.inet_pton(socket.AF_INET6 if ":" in born[0] else socket.AF_INET, born[0])
    sys_flag = 0x10 if len(born_a) == 16 else 0
    buf = bytearray(40_000)
    end = twin.write_record(buf, 5, b"xyz", b"TopicW", props, 1, 2, 3, 1005, sys_flag, 4, born_a, born[1], 6,
                            b"\x7f\x00\x00\x01", 7, 8, 9, -1)
    r = ref_parse(buf, 5)
    assert end == 5 + r["totalSize"]
    assert (r["queueId"], r["flag"], r["queueOffset"], r["physicalOffset"], r["bornTimestamp"], r["bornHost"],
            r["bornPort"], r["storeTimestamp"], r["storePort"], r["reconsumeTimes"], r["preparedTransactionOffset"],
            r["body"], r["topic"], r["propertiesRaw"], r["bodyCRC"]) == (
        1, 2, 3, 1005, 4, born[0], born[1], 6, 7, 8, 9, b"xyz", "TopicW", props, zlib.crc32(b"xyz") & 0x7FFFFFFF)
    assert ref_encode(b"TopicW", b"xyz", props, born=born, store=("127.0.0.1", 7), qid=1, flag=2, qoff=3, phys=1005,
                      reconsume=8, prepared=9)[48 + len(born_a) + 4 + 8:] == bytes(buf[5 + 48 + len(born_a) + 4 + 8: end])


# -- corrupt input --------------------------------------------------------------------------------------


def garbled(rnd: random.Random) -> tuple[bytes, int]:
    if rnd.random() < 0.15:
        buf = rnd.randbytes(rnd.randint(0, 200))
        return buf, rnd.randint(0, len(buf))
    props = rnd.choice([b"", b"TAGS\x01t", b"KEYS\x01a b\x02UNIQ_KEY\x01U1", b"DELAY\x012\x02TAGS\x01x",
                        "KEYS\x01ключ".encode()])
    rec = bytearray(ref_encode(rnd.choice([b"T", b"TopicA", "Тема".encode()]), rnd.randbytes(rnd.randint(0, 50)),
                               props, v2=rnd.random() < 0.3,
                               born=rnd.choice([("127.0.0.1", 1), ("::1", 2)]),
                               store=rnd.choice([("127.0.0.1", 1), ("fe80::9", 2)])))
    for _ in range(rnd.randint(0, 3)):
        rec[rnd.randrange(len(rec))] = rnd.randrange(256)
    if rnd.random() < 0.3:
        rec = rec[: rnd.randrange(len(rec) + 1)]
    pad = rnd.choice([0, 0, 3])
    return bytes(pad) + bytes(rec) + bytes(rnd.choice([0, 0, 10])), pad


@pytest.mark.parametrize("twin", TWINS)
def test_garbled_records_read_as_the_reference_reads_them(twin):
    """Replaces the check against CommitLog.check_message_and_return_size, which delegates to the twin."""
    rnd = random.Random(6)
    for _ in range(1500):
        buf, pos = garbled(rnd)
        for strict in (False, True):
            assert project(buf, twin.parse_record(buf, pos, strict)) == ref_projection(ref_parse(buf, pos, strict)), \
                (buf, pos, strict)
        if pos == 0:
            for crc in (False, True):
                assert twin.walk_records(buf, 0, 0, crc) == ref_walk(buf, 0, crc), buf


@needs_compiled
def test_twins_agree_on_garbled_records_and_the_full_decoder_fails_cleanly():
    rnd = random.Random(7)
    c, p = speedups.compiled, speedups.pure
    for _ in range(3000):
        buf, pos = garbled(rnd)
        for strict in (False, True):
            assert c.parse_record(buf, pos, strict) == p.parse_record(buf, pos, strict), (buf, pos)
        assert c.walk_records(buf, pos, 0, True) == p.walk_records(buf, pos, 0, True)
        for bad in (-1, len(buf) + 1):
            for twin in (c, p):
                with pytest.raises(IndexError):
                    twin.parse_record(buf, bad)
        try:
            decode_message(buf, pos)
        except RecordDecodeError:
            pass
        else:
            assert ref_parse(buf, pos) is not None  # what the full decoder accepts is a record


def test_full_decoder_errors_say_what_is_wrong():
    rec = ref_encode(b"T", b"b", b"")
    with pytest.raises(RecordDecodeError, match="bad magic 0x00000000 at 0"):
        decode_message(bytes(100))
    with pytest.raises(RecordDecodeError, match=f"truncated record header at {len(rec) - 4}"):
        decode_message(rec, len(rec) - 4)
    with pytest.raises(RecordDecodeError, match="bad total size"):
        decode_message(rec[:-1])
    with pytest.raises(RecordDecodeError, match="bad body length -1"):
        decode_message(rec[:84] + struct.pack(">i", -1) + rec[88:])
    with pytest.raises(RecordDecodeError, match="record lengths do not add up"):
        decode_message(rec[:-2] + b"\x00\x05")
    assert record_codec.decode_record(rec)[18] == "T"


def test_the_pure_twin_is_the_codec():
    """speedups' pure record functions are the codec's, not a second copy; the store and the
    filter read records through speedups, and decode_message through the codec."""
    for name in ("parse_record", "walk_records", "split_batch", "encode_records", "write_record", "dispatch_props",
                 "batch_properties"):
        assert getattr(speedups.pure, name) is getattr(record_codec, name), name
