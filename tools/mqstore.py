"""mqstore: inspect and verify RocketMQ 4.9 store files (run as ``bin/mqstore``).

Commands::

    mqstore commitlog <dir> [--from OFFSET] [--count N] [--verify]
    mqstore consumequeue <dir> [--from INDEX] [--count N]
    mqstore index <file> [--hash-slots N --index-num M] [--slots]
    mqstore check [<storeRoot>] [-c broker.conf] [--commitlog DIR] [--delay-levels "1s 5s ..."]
                  [--hash-slots N --index-num M] [--no-crc] [--strict]

``commitlog`` lists records (one aligned line each), ``--verify`` checks each body
CRC; ``consumequeue`` lists the 20-byte units of one ``consumequeue/<topic>/<queueId>``
directory; ``index`` prints an IndexFile's header and entries (geometry inferred
from the file when not given); ``check`` verifies every CommitLog record (magic,
lengths, stored physical offset, body CRC) and that every ConsumeQueue unit points
at a record of the same topic, queue, queue offset, size and tags code, and that
every index entry points at a record start. Exit status: 0 when everything is
fine, 1 with a one-line reason on stderr when a problem is found, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import ipaddress
import mmap
import os
import re
import struct
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from common import record_codec
from common.errors import RecordDecodeError, StoreError  # StoreError: a file cannot be read at all
from common.util import tags_code
from store.index_file import (
    HASH_SLOT_SIZE,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_SIZE,
    IndexFile,
    IndexFileError,
    index_key_hash,
)

BLANK_MAGIC = record_codec.BLANK_MAGIC_CODE
CQ_UNIT_SIZE = 20
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
DEFAULT_INDEX_GEOMETRY = (5_000_000, 20_000_000)
_FILE_NAME = re.compile(r"^\d{20}$")
_INDEX_NAME = re.compile(r"^\d{17}$")

_CQ_UNIT = struct.Struct(">qiq")




# --------------------------------------------------------------------------
# CommitLog records


@dataclass(slots=True)
class Record:
    """One CommitLog record as stored (hosts as text, properties decoded)."""

    phy_offset: int
    total_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    stored_phy_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict[str, str]

    def computed_crc(self) -> int:
        return zlib.crc32(self.body) & 0x7FFFFFFF

    def tags_code(self, delay_levels_ms: list[int]) -> int:
        """The consume-queue tags code RocketMQ computes for this record at dispatch."""
        if self.topic == SCHEDULE_TOPIC:
            try:
                level = int(self.properties.get("DELAY", "0"))
            except ValueError:
                level = 0
            if level > len(delay_levels_ms):
                level = len(delay_levels_ms)
            if level > 0:
                return self.store_timestamp + delay_levels_ms[level - 1]
        tags = self.properties.get("TAGS")
        return tags_code(tags)


RecordError = RecordDecodeError  # the one record-decode error (common.errors)


def _host(addr: bytes, port: int) -> str:
    if len(addr) == 16:
        return f"[{ipaddress.IPv6Address(addr)}]:{port}"
    a, b, c, d = addr
    return f"{a}.{b}.{c}.{d}:{port}"


#: RocketMQ's string2messageProperties.
parse_properties = record_codec.parse_properties


def parse_record(buf, pos: int, phy_offset: int) -> Record:
    """Parse the record at ``buf[pos:]``; raise RecordError when it is not a valid MESSAGE record."""
    (size, magic, crc, qid, flag, qoff, phys, sysflag, born_ts, born_a, born_port, store_ts, store_a, store_port,
     recon, prep, body_start, body_len, topic, props_start, props_len) = record_codec.decode_record(buf, pos)
    try:
        props = str(buf[props_start : props_start + props_len], "utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"record does not parse: {e}") from None
    return Record(
        phy_offset, size, magic, crc, qid, flag, qoff, phys, sysflag, born_ts, _host(born_a, born_port), store_ts,
        _host(store_a, store_port), recon, prep, bytes(buf[body_start : body_start + body_len]), topic,
        parse_properties(props),
    )


def _mapped_files(directory: str, unit: int = 1) -> list[tuple[int, str, int]]:
    """(start offset, path, size) of the 20-digit-named files of a mapped file queue, in order."""
    if not os.path.isdir(directory):
        raise StoreError(f"{directory}: not a directory")
    files = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if _FILE_NAME.match(name) and os.path.isfile(path):
            files.append((int(name), path, os.path.getsize(path)))
    return files


@dataclass(slots=True)
class Walked:
    """One step of a CommitLog walk: a record, a BLANK, or a problem."""

    kind: str  # "record" | "blank" | "error"
    phy_offset: int
    record: Record | None = None
    size: int = 0
    reason: str = ""


def walk_commit_log(directory: str, start: int = 0) -> Iterator[Walked]:
    """Walk every record from physical offset ``start``; on an unparsable record, report it and skip to the next file."""
    files = _mapped_files(directory)
    if not files:
        return
    file_size = files[0][2]
    prev_end = None
    for i, (base, path, size) in enumerate(files):
        last = i == len(files) - 1
        if size != file_size:
            yield Walked("error", base, reason=f"file {os.path.basename(path)} has {size} bytes, others {file_size}")
            continue
        if prev_end is not None and base != prev_end:
            yield Walked("error", base, reason=f"file {os.path.basename(path)} does not follow the previous file (gap or overlap)")
        prev_end = base + size
        if start >= base + size:
            continue
        with open(path, "rb") as fh:
            if size == 0:
                continue
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            pos = max(0, start - base)
            while pos + 8 <= size:
                total, magic = struct.unpack_from(">ii", mm, pos)
                if magic == BLANK_MAGIC:
                    yield Walked("blank", base + pos, size=total)
                    break
                if total == 0 and magic == 0:
                    if not last:
                        yield Walked("error", base + pos, reason="data ends without a BLANK record in a file that is not the last")
                    break
                try:
                    rec = parse_record(mm, pos, base + pos)
                except RecordError as e:
                    yield Walked("error", base + pos, reason=str(e))
                    break
                yield Walked("record", base + pos, record=rec, size=rec.total_size)
                pos += rec.total_size
        finally:
            mm.close()


def commit_log_min_offset(directory: str) -> int:
    files = _mapped_files(directory)
    return files[0][0] if files else 0


def parse_delay_levels(text: str) -> list[int]:
    """``messageDelayLevel`` ("1s 5s 1m 2h 1d") in ms."""
    unit = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    out = []
    for tok in text.split():
        if not tok or tok[-1] not in unit or not tok[:-1].isdigit():
            raise StoreError(f"bad delay level {tok!r}")
        out.append(int(tok[:-1]) * unit[tok[-1]])
    return out


# --------------------------------------------------------------------------
# ConsumeQueue


def walk_consume_queue(directory: str) -> Iterator[tuple[int, int, int, int, str]]:
    """(logical index, commitLogOffset, size, tagsCode, file name) of every unit up to the first empty one."""
    for base, path, size in _mapped_files(directory):
        if base % CQ_UNIT_SIZE or size % CQ_UNIT_SIZE:
            raise StoreError(f"{path}: name or size is not a multiple of {CQ_UNIT_SIZE}")
        with open(path, "rb") as fh:
            data = fh.read()
        for pos in range(0, size, CQ_UNIT_SIZE):
            off, sz, tags = _CQ_UNIT.unpack_from(data, pos)
            if off == 0 and sz == 0 and tags == 0:
                return
            yield (base + pos) // CQ_UNIT_SIZE, off, sz, tags, os.path.basename(path)


def _is_prefill(off: int, size: int, tags: int) -> bool:
    return off == 0 and size == 0x7FFFFFFF and tags == 0


# --------------------------------------------------------------------------
# IndexFile geometry


def infer_index_geometry(path: str) -> tuple[int, int]:
    """(hashSlotNum, indexNum) of an IndexFile: the defaults when the size matches,
    else the only slot count consistent with the newest entries and the slot table."""
    size = os.path.getsize(path)
    if size == INDEX_HEADER_SIZE + DEFAULT_INDEX_GEOMETRY[0] * 4 + DEFAULT_INDEX_GEOMETRY[1] * 20:
        return DEFAULT_INDEX_GEOMETRY
    with open(path, "rb") as fh:
        data = fh.read()
    if size < INDEX_HEADER_SIZE:
        raise StoreError(f"{path}: {size} bytes is smaller than an index header")
    hash_slot_count, index_count = struct.unpack_from(">ii", data, 32)
    if index_count <= 1:
        raise StoreError(f"{path}: empty index file, give --hash-slots and --index-num")
    rest = size - INDEX_HEADER_SIZE
    found = []
    for slots in range(1, rest // HASH_SLOT_SIZE + 1):
        ent_bytes = rest - slots * HASH_SLOT_SIZE
        if ent_bytes <= 0 or ent_bytes % INDEX_ENTRY_SIZE:
            continue
        entries = ent_bytes // INDEX_ENTRY_SIZE
        if entries < index_count:
            continue
        base = INDEX_HEADER_SIZE + slots * HASH_SLOT_SIZE
        # the newest entry always heads its slot's chain
        kh = struct.unpack_from(">i", data, base + (index_count - 1) * INDEX_ENTRY_SIZE)[0]
        if kh < 0 or struct.unpack_from(">i", data, INDEX_HEADER_SIZE + (kh % slots) * 4)[0] != index_count - 1:
            continue
        vals = struct.unpack_from(f">{slots}i", data, INDEX_HEADER_SIZE)
        if sum(1 for v in vals if v) != hash_slot_count or any(v < 0 or v >= index_count for v in vals):
            continue
        found.append((slots, entries))
    if len(found) != 1:
        raise StoreError(f"{path}: cannot infer the geometry ({len(found)} candidates), give --hash-slots and --index-num")
    return found[0]


# --------------------------------------------------------------------------
# commands


def _fmt_ts(ms: int) -> str:
    import time

    if ms <= 0:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms // 1000)) + f".{ms % 1000:03d}"


def cmd_commitlog(args) -> int:
    shown = bad = 0
    print(f"{'phyOffset':>14} {'size':>7} {'queueOffset':>11} {'qid':>4} {'sysFlag':>7} {'storeTime':<23} "
          f"{'bornHost':<22} {'body':>7} {'crc':<4} topic / keys / tags")
    for w in walk_commit_log(args.dir, args.from_offset):
        if shown >= args.count:
            break
        shown += 1
        if w.kind == "blank":
            print(f"{w.phy_offset:>14} {w.size:>7} {'BLANK':>11}")
            continue
        if w.kind == "error":
            bad += 1
            print(f"{w.phy_offset:>14} {'?':>7} {'ERROR':>11} {w.reason}")
            continue
        r = w.record
        crc = "-"
        if args.verify:
            ok = r.computed_crc() == r.body_crc and r.stored_phy_offset == r.phy_offset
            crc = "ok" if ok else "BAD"
            bad += 0 if ok else 1
        keys = r.properties.get("KEYS", "")
        tags = r.properties.get("TAGS", "")
        print(f"{r.phy_offset:>14} {r.total_size:>7} {r.queue_offset:>11} {r.queue_id:>4} {r.sys_flag:>#7x} "
              f"{_fmt_ts(r.store_timestamp):<23} {r.born_host:<22} {len(r.body):>7} {crc:<4} "
              f"{r.topic} keys={keys!r} tags={tags!r}")
    if bad:
        print(f"FAILED: {bad} bad record(s)", file=sys.stderr)
        return 1
    return 0


def cmd_consumequeue(args) -> int:
    print(f"{'index':>10} {'commitLogOffset':>16} {'size':>11} {'tagsCode':>20}  file")
    shown = 0
    for idx, off, size, tags, name in walk_consume_queue(args.dir):
        if idx < args.from_index:
            continue
        if shown >= args.count:
            break
        shown += 1
        note = "  (pre-fill)" if _is_prefill(off, size, tags) else ""
        print(f"{idx:>10} {off:>16} {size:>11} {tags:>20}  {name}{note}")
    return 0


def cmd_index(args) -> int:
    if (args.hash_slots is None) != (args.index_num is None):
        raise StoreError("give both --hash-slots and --index-num, or neither")
    slots, num = (args.hash_slots, args.index_num) if args.hash_slots else infer_index_geometry(args.file)
    try:
        f = IndexFile(args.file, slots, num, read_only=True)
    except IndexFileError as e:
        raise StoreError(str(e)) from None
    try:
        f.load()
        h = f.header
        print(f"file {f.file_name}  hashSlotNum={slots} indexNum={num} size={f.file_size}")
        print(f"beginTimestamp={h.begin_timestamp} ({_fmt_ts(h.begin_timestamp)})  "
              f"endTimestamp={h.end_timestamp} ({_fmt_ts(h.end_timestamp)})")
        print(f"beginPhyOffset={h.begin_phy_offset}  endPhyOffset={h.end_phy_offset}  "
              f"hashSlotCount={h.hash_slot_count}  indexCount={h.index_count}")
        if args.slots:
            print(f"{'slot':>10} {'entry':>10}")
            for s, v in f.iter_slots():
                print(f"{s:>10} {v:>10}")
        print(f"{'entry':>10} {'keyHash':>11} {'slot':>10} {'phyOffset':>14} {'timeDiff':>9} {'prev':>10}  time")
        for n, kh, off, td, prev in f.iter_entries():
            t = h.begin_timestamp + td * 1000 if h.begin_timestamp > 0 else 0
            print(f"{n:>10} {kh:>11} {kh % slots:>10} {off:>14} {td:>9} {prev:>10}  {_fmt_ts(t)}")
    finally:
        f.close()
    return 0


def _apply_conf(args) -> None:
    """Fill unset check options from a broker .conf file (``-c``)."""
    from common.config import ConfigError, apply_properties, load_properties_file
    from store.config import MessageStoreConfig

    try:
        props = load_properties_file(args.conf)
        conf = apply_properties(MessageStoreConfig(), props)
    except (OSError, ConfigError) as e:
        raise StoreError(f"{args.conf}: {e}") from None
    if args.root is None and "storePathRootDir" in props:
        args.root = conf.storePathRootDir
    if args.commitlog is None and props.get("storePathCommitLog"):
        args.commitlog = conf.storePathCommitLog
    if args.delay_levels is None and "messageDelayLevel" in props:
        args.delay_levels = conf.messageDelayLevel
    if args.hash_slots is None and args.index_num is None:
        args.hash_slots, args.index_num = conf.maxHashSlotNum, conf.maxIndexNum


def cmd_check(args) -> int:
    if args.conf:
        _apply_conf(args)
    if args.delay_levels is None:
        args.delay_levels = DEFAULT_DELAY_LEVELS
    if (args.hash_slots is None) != (args.index_num is None):
        raise StoreError("give both --hash-slots and --index-num, or neither")
    root = args.root
    if root is None:
        raise StoreError("no store root: give <storeRoot> or a -c file with storePathRootDir")
    if not os.path.isdir(root):
        raise StoreError(f"{root}: not a directory")
    cl_dir = args.commitlog or os.path.join(root, "commitlog")
    if not os.path.isdir(cl_dir) and any(n.startswith("dledger-") for n in os.listdir(root)):
        raise StoreError(f"{root}: DLedger stores (dledger-*/data) are not supported by check")
    delay = parse_delay_levels(args.delay_levels)
    problems: list[str] = []

    def problem(msg: str) -> None:
        problems.append(msg)
        print(f"PROBLEM {msg}")

    # 1. CommitLog
    records: dict[int, tuple[str, int, int, int, int, int]] = {}
    index_keys: dict[int, tuple[str, str | None, str]] = {}  # phy offset -> (topic, UNIQ_KEY, KEYS)
    n_records = 0
    max_offset = commit_log_min_offset(cl_dir)
    for w in walk_commit_log(cl_dir):
        if w.kind == "error":
            problem(f"commitlog @{w.phy_offset}: {w.reason}")
            continue
        if w.kind == "blank":
            continue
        r = w.record
        n_records += 1
        max_offset = r.phy_offset + r.total_size
        if r.stored_phy_offset != r.phy_offset:
            problem(f"commitlog @{r.phy_offset}: stored physical offset {r.stored_phy_offset} differs from its position")
        if not args.no_crc and r.computed_crc() != r.body_crc:
            problem(f"commitlog @{r.phy_offset}: body CRC mismatch (stored {r.body_crc}, computed {r.computed_crc()}) "
                    f"topic {r.topic} queue {r.queue_id} offset {r.queue_offset}")
        records[r.phy_offset] = (r.topic, r.queue_id, r.queue_offset, r.total_size, r.tags_code(delay), r.sys_flag)
        index_keys[r.phy_offset] = (r.topic, r.properties.get("UNIQ_KEY"), r.properties.get("KEYS", ""))
    min_offset = commit_log_min_offset(cl_dir)

    # 2. ConsumeQueues
    cq_root = os.path.join(root, "consumequeue")
    n_units = 0
    referenced: set[int] = set()
    if os.path.isdir(cq_root):
        for topic in sorted(os.listdir(cq_root)):
            tdir = os.path.join(cq_root, topic)
            if not os.path.isdir(tdir):
                continue
            for qname in sorted(os.listdir(tdir)):
                qdir = os.path.join(tdir, qname)
                if not qname.isdigit() or not os.path.isdir(qdir):
                    continue
                qid = int(qname)
                where = f"consumequeue/{topic}/{qid}"
                try:
                    units = list(walk_consume_queue(qdir))
                except StoreError as e:
                    problem(str(e))
                    continue
                for idx, off, size, tags, _name in units:
                    if _is_prefill(off, size, tags) or off < min_offset:
                        continue
                    n_units += 1
                    rec = records.get(off)
                    if rec is None:
                        why = "beyond the commit log end" if off >= max_offset else "not at a record start"
                        problem(f"{where} unit {idx}: commitLogOffset {off} is {why}")
                        continue
                    referenced.add(off)
                    r_topic, r_qid, r_qoff, r_size, r_tags, _sf = rec
                    diffs = []
                    if r_topic != topic:
                        diffs.append(f"topic {r_topic!r}")
                    if r_qid != qid:
                        diffs.append(f"queueId {r_qid}")
                    if r_qoff != idx:
                        diffs.append(f"queueOffset {r_qoff}")
                    if r_size != size:
                        diffs.append(f"size {r_size} (unit says {size})")
                    # an ext address (<= -2^31-1) replaces the tags code when consume-queue ext is on
                    if tags > -2147483649 and r_tags != tags:
                        diffs.append(f"tagsCode {r_tags} (unit says {tags})")
                    if diffs:
                        problem(f"{where} unit {idx} -> @{off}: record has " + ", ".join(diffs))
    missing = [off for off, rec in records.items() if off not in referenced and (rec[5] & 0xC) in (0x0, 0x8)]
    if missing:
        msg = f"{len(missing)} record(s) have no consume-queue unit (first @{min(missing)})"
        if args.strict:
            problem(msg)
        else:
            print(f"WARNING {msg}")

    # 3. Index files
    idx_dir = os.path.join(root, "index")
    n_index = 0
    if os.path.isdir(idx_dir):
        for name in sorted(os.listdir(idx_dir)):
            path = os.path.join(idx_dir, name)
            if not _INDEX_NAME.match(name) or not os.path.isfile(path):
                continue
            try:
                slots, num = (args.hash_slots, args.index_num) if args.hash_slots else infer_index_geometry(path)
                f = IndexFile(path, slots, num, read_only=True)
            except (StoreError, IndexFileError) as e:
                print(f"WARNING index/{name}: not checked: {e}")
                continue
            n_index += 1
            try:
                f.load()
                for n, kh, off, _td, prev in f.iter_entries():
                    if off >= min_offset and off not in records:
                        problem(f"index/{name} entry {n}: phyOffset {off} is not a record start")
                    elif off in index_keys and kh not in _record_key_hashes(index_keys[off]):
                        problem(f"index/{name} entry {n}: keyHash {kh} is none of the keys of the record @{off}")
                    if prev < 0 or prev >= n:
                        problem(f"index/{name} entry {n}: bad chain link {prev}")
            finally:
                f.close()

    summary = f"{n_records} records, {n_units} consume-queue units, {n_index} index files checked"
    if problems:
        print(f"FAILED: {len(problems)} problem(s) in {summary}; first: {problems[0]}", file=sys.stderr)
        return 1
    print(f"OK: {summary}")
    return 0


def _record_key_hashes(keys: tuple[str, str | None, str]) -> set[int]:
    topic, uniq, raw = keys
    out = {index_key_hash(f"{topic}#{k}") for k in raw.split(" ") if k}
    if uniq:
        out.add(index_key_hash(f"{topic}#{uniq}"))
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mqstore", description="Inspect and verify RocketMQ 4.9 store files.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("commitlog", help="list CommitLog records")
    c.add_argument("dir")
    c.add_argument("--from", dest="from_offset", type=int, default=0, help="physical offset to start at")
    c.add_argument("--count", type=int, default=sys.maxsize)
    c.add_argument("--verify", action="store_true", help="check each body CRC and stored offset")
    c.set_defaults(func=cmd_commitlog)
    q = sub.add_parser("consumequeue", help="list the units of consumequeue/<topic>/<queueId>")
    q.add_argument("dir")
    q.add_argument("--from", dest="from_index", type=int, default=0, help="logical offset to start at")
    q.add_argument("--count", type=int, default=sys.maxsize)
    q.set_defaults(func=cmd_consumequeue)
    i = sub.add_parser("index", help="print an IndexFile")
    i.add_argument("file")
    i.add_argument("--hash-slots", type=int)
    i.add_argument("--index-num", type=int)
    i.add_argument("--slots", action="store_true", help="also print the non-empty hash slots")
    i.set_defaults(func=cmd_index)
    k = sub.add_parser("check", help="verify a whole store")
    k.add_argument("root", nargs="?", help="storePathRootDir (default: the -c file's)")
    k.add_argument("-c", "--conf", help="broker .conf: store paths, messageDelayLevel, index geometry")
    k.add_argument("--commitlog", help="CommitLog dir when not <root>/commitlog")
    k.add_argument("--delay-levels", help="messageDelayLevel of the broker (default: RocketMQ's)")
    k.add_argument("--hash-slots", type=int)
    k.add_argument("--index-num", type=int)
    k.add_argument("--no-crc", action="store_true", help="skip body CRC checks")
    k.add_argument("--strict", action="store_true", help="records without a consume-queue unit are problems")
    k.set_defaults(func=cmd_check)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except StoreError as e:
        print(f"mqstore: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
