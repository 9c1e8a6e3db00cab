"""Where a broker's time goes per message: a cProfile stats file grouped into the send path's stages.

    python bench/profile_breakdown.py STATS_FILE --messages N [--top 12]

``bench_broker.py --profile FILE`` writes STATS_FILE (the broker's main thread under cProfile) and
prints this breakdown itself at the end. Each function's own time (cProfile's tottime, so nothing
is counted twice) goes to the first stage whose rule matches its file and name; the figures are
microseconds per stored message and shares of the profiled total. cProfile's own overhead inflates
every call a little, so read the shares, and take absolute CPU per message from bench_broker's
un-profiled rounds.
"""

from __future__ import annotations

import argparse
import pstats
from collections import defaultdict

#: (stage, path fragments, function-name fragments): a function belongs to the first stage where one
#: of the path fragments is in its file name and (when names are given) one name fragment in its name.
#: uvloop's transport methods are Cython functions, which cProfile does not see as calls: their time
#: (the socket writes) shows as Connection._handle's / _flush's own time, hence that stage's name.
STAGES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("start-up / shutdown (not per message)", ("broker/broker_controller.py", "broker/broker_startup.py"),
     ("shutdown", "start", "create_broker", "<module>")),
    ("start-up / shutdown (not per message)", ("",), ("<module>", "builtins.compile", "_find_and_load",
                                                      "exec_module", "get_code")),
    ("socket writes (Connection._handle, _flush)", ("remoting/connection.py",), ("_handle", "_flush")),
    ("socket writes (Connection._handle, _flush)", ("~",), ("writelines", "sendmsg")),
    # the JSON / binary header of a request, and the send header read from its extFields (with the
    # compiled calls they make, charged here through their caller)
    ("header decode", ("remoting/codec.py",), ("_decode_json", "_decode_binary")),
    ("header decode", ("broker/processor/send_message_header.py",), ()),
    ("frame parse", ("remoting/codec.py",), ("feed", "decode", "_frames", "FrameDecoder")),
    ("header decode", ("remoting/header", "remoting/fastjson.py", "remoting/command.py"), ("decode", "loads", "parse",
                                                                                             "from_", "header")),
    ("response encode", ("remoting/codec.py", "remoting/command.py", "remoting/fastjson.py"), ()),
    ("dispatch (CQ + index)", ("store/consume_queue.py", "store/index", "store/dispatch.py",
                               "store/reput_message_service.py", "broker/filter/commit_log_dispatcher"), ()),
    ("dispatch (CQ + index)", ("",), ("cq_put_units", "index_build_many", "index_put")),
    ("store append", ("store/commit_log.py", "store/default_message_store.py", "common/mapped_file.py",
                      "store/dledger_commit_log.py", "common/message.py", "store/put_message",
                      "store/message_store.py"), ()),
    ("store append", ("",), ("write_record", "encode_records", "batch_properties", "msg_ids", "dispatch_requests",
                             "new_dispatch_request", "crc32")),
    ("flush / group commit", ("store/flush_service.py", "common/fsync_worker.py", "store/disk_flush_and_ha.py"), ()),
    ("replication (DLedger, HA)", ("dledger/", "broker/ha_service.py"), ()),
    ("processor", ("broker/",), ()),
    ("remoting (dispatch, futures)", ("remoting/",), ()),
    ("event loop", ("asyncio/", "uvloop", "selectors.py", "threading.py"), ()),
    ("event loop", ("~",), ("run_forever", "run_once", "select", "epoll", "poll'", "_run'", "call_soon")),
]


def stage_of(filename: str, name: str) -> str:
    for stage, paths, names in STAGES:
        if any(p in filename for p in paths) and (not names or any(n in name for n in names)):
            return stage
    return "other"


def breakdown(stats_file: str) -> tuple[dict[str, float], dict[str, list[tuple[float, str]]], float]:
    st = pstats.Stats(stats_file)
    per_stage: dict[str, float] = defaultdict(float)
    funcs: dict[str, list[tuple[float, str]]] = defaultdict(list)
    total = 0.0
    raw = st.stats  # type: ignore[attr-defined]

    def own_stage(key) -> str:
        filename, _line, name = key
        return stage_of(filename.replace("\\", "/"), f"'{name}'" if filename == "~" else name)

    for key, (_cc, _nc, tottime, _ct, callers) in raw.items():
        filename, line, name = key
        stage = own_stage(key)
        if stage == "other" and filename == "~" and callers:
            # a C builtin (struct.pack_into, dict.get, orjson.loads, pwrite): charged to the stage of
            # the caller that spent the most time in it
            top = max(callers.items(), key=lambda kv: kv[1][2])[0]
            stage = own_stage(top)
        per_stage[stage] += tottime
        funcs[stage].append((tottime, f"{filename.rsplit('/', 2)[-1] if filename != '~' else ''}:{line} {name}"))
        total += tottime
    return per_stage, funcs, total


def report(stats_file: str, messages: int, top: int = 3) -> str:
    per_stage, funcs, total = breakdown(stats_file)
    n = max(messages, 1)
    lines = [f"profile breakdown ({stats_file}): {total:.2f} s profiled over {messages} messages "
             f"= {total / n * 1e6:.1f} us/msg (under cProfile)"]
    for stage, secs in sorted(per_stage.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {stage:<30} {secs / n * 1e6:8.2f} us/msg  {secs / total * 100 if total else 0:5.1f} %")
        for t, where in sorted(funcs[stage], reverse=True)[:top]:
            lines.append(f"      {t / n * 1e6:8.2f} us  {where}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stats")
    ap.add_argument("--messages", type=int, required=True, help="messages the broker stored while profiled")
    ap.add_argument("--top", type=int, default=3, help="functions shown per stage")
    args = ap.parse_args()
    print(report(args.stats, args.messages, args.top))


if __name__ == "__main__":
    main()
