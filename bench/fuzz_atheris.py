"""Coverage-guided fuzzing of the wire and store decoders with atheris, for long runs on demand (not in CI;
the bounded hypothesis tier is tests/fuzz).

One input exercises, chosen by its first byte: the frame decoder (fed in chunks), the JSON and binary
header decoders, the client batch splitter (both twins must agree), the CommitLog record parser and
recovery walker (both twins must agree), message decoding, the SQL92 selector and the ACL request
parser. Anything but the decoder's own error type is a finding (atheris stops and writes the input).

    .venv/bin/pip install atheris
    .venv/bin/python bench/fuzz_atheris.py -atheris_runs=1000000 [corpus_dir]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import atheris
except ImportError:  # pragma: no cover - optional tool
    sys.exit("atheris is not installed: .venv/bin/pip install atheris")

with atheris.instrument_imports():
    from broker.acl.acl_exception import AclException
    from broker.acl.plain_access_validator import PlainAccessValidator
    from broker.filter.expression import compile_expression
    from broker.filter.selector_parser import FilterParseError
    from common import speedups
    from common.message import MessageDecodeError, decode_batch_body, decode_messages
    from remoting.codec import FrameDecoder, decode_header
    from remoting.codes import SerializeType
    from remoting.errors import RemoteProtocolError

TWINS = [t for t in (speedups.pure, speedups.compiled) if t is not None]


class _Refuse:
    def validate(self, req) -> None:
        raise AclException("refused")


_VALIDATOR = PlainAccessValidator(_Refuse())


def one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    kind, rest = data[0] % 8, data[1:]
    if kind == 0:
        dec = FrameDecoder(1 << 20)
        step = max(1, data[1])
        try:
            for i in range(0, len(rest), step):
                dec.feed(rest[i:i + step])
        except RemoteProtocolError:
            pass
    elif kind == 1:
        try:
            decode_header(SerializeType.JSON if data[1] & 1 else SerializeType.ROCKETMQ, rest[1:])
        except RemoteProtocolError:
            pass
    elif kind == 2:
        results = [t.split_batch(rest) for t in TWINS]
        assert all(r == results[0] for r in results), results
        try:
            decode_batch_body(rest)
        except MessageDecodeError:
            pass
    elif kind == 3:
        walks = [t.walk_records(rest, 0, 0, bool(data[1] & 1)) for t in TWINS]
        assert all(w == walks[0] for w in walks), walks
        parsed = [t.parse_record(rest, 0, True) for t in TWINS]
        assert all(p == parsed[0] for p in parsed), parsed
    elif kind == 4:
        try:
            decode_messages(rest)
        except MessageDecodeError:
            pass
    elif kind == 5:
        try:
            compile_expression("SQL92", rest.decode("utf-8", "replace")).evaluate({"a": "1"})
        except FilterParseError:
            pass
    else:
        try:
            cmd = decode_header(SerializeType.JSON, rest)
        except RemoteProtocolError:
            return
        cmd.body = rest[-64:]
        try:
            _VALIDATOR.validate(cmd, "127.0.0.1:1")
        except AclException:
            pass


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
