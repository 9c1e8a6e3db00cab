"""A loopback proxy that records every remoting frame passing through it.

Used to pin down what the official C++ client sends and what our processes
answer. Frames are forwarded byte for byte; each one is also decoded with
remoting.codec.FrameDecoder and recorded (direction, code, flag, opaque, remark,
extFields, body length and the first bytes of the body).

To see a client's broker traffic, put one proxy in front of the Broker and one
in front of the NameServer whose route answers (GET_ROUTEINFO_BY_TOPIC) have
the Broker's address replaced by the broker proxy's (``rewrite``)::

    bp = FrameProxy(cluster.broker).start()
    np = FrameProxy(cluster.namesrv, rewrite={cluster.broker: bp.addr}).start()
    ... client uses np.addr as its NameServer ...
    [f for f in bp.frames if f["code"] == 320]

Run standalone (``python frame_proxy.py TARGET [--log FILE]``) to print frames as
JSON lines while a client talks to the printed address.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import sys
import threading
import time

from remoting.codec import FrameDecoder

_LEN = struct.Struct(">I")


def describe(cmd, direction: str) -> dict:
    """A JSON-able summary of one decoded command."""
    body = cmd.body or b""
    return {
        "dir": direction,
        "t": round(time.time(), 3),
        "code": cmd.code,
        "flag": cmd.flag,
        "response": bool(cmd.flag & 1),
        "opaque": cmd.opaque,
        "language": int(cmd.language) if isinstance(cmd.language, int) else str(cmd.language),
        "version": cmd.version,
        "serialize": cmd.serialize_type,
        "remark": cmd.remark,
        "ext": dict(cmd.ext_fields or {}),
        "body_len": len(body),
        "body_head": body[:512].decode("latin-1"),
    }


class FrameProxy:
    """Forward one listening loopback port to ``target``, recording frames in ``frames``."""

    def __init__(self, target: str, rewrite: dict[str, str] | None = None, log_path=None):
        self.target = target
        self.rewrite = {k.encode(): v.encode() for k, v in (rewrite or {}).items()}
        self.frames: list[dict] = []
        self.log_path = log_path
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self.addr = ""

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> FrameProxy:
        self._thread = threading.Thread(target=self._run, name=f"frame-proxy-{self.target}", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("frame proxy did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> FrameProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            # Close the listener and every forwarding task before the loop goes away, so that
            # no coroutine is left to be collected on a closed loop.
            self._server.close()
            tasks = asyncio.all_tasks(loop)
            for t in tasks:
                t.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

    # -- forwarding --------------------------------------------------------------

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        host, port = self.target.rsplit(":", 1)
        try:
            sreader, swriter = await asyncio.open_connection(host, int(port))
        except OSError:
            cwriter.close()
            return
        pumps = [
            asyncio.ensure_future(self._pump(creader, swriter, "c2s", rewrite=False)),
            asyncio.ensure_future(self._pump(sreader, cwriter, "s2c", rewrite=bool(self.rewrite))),
        ]
        try:
            await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            for p in pumps:
                p.cancel()

    async def _pump(self, reader, writer, direction: str, rewrite: bool) -> None:
        buf = bytearray()
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                buf += data
                while len(buf) >= 4:
                    (n,) = _LEN.unpack_from(buf, 0)
                    if len(buf) < 4 + n:
                        break
                    frame = bytes(buf[: 4 + n])
                    del buf[: 4 + n]
                    if rewrite:
                        frame = self._rewrite(frame)
                    self._record(frame, direction)
                    writer.write(frame)
                await writer.drain()
            if buf:
                writer.write(bytes(buf))
        except (OSError, asyncio.IncompleteReadError):
            pass  # either side went away: so does the other
        finally:
            writer.close()

    def _rewrite(self, frame: bytes) -> bytes:
        """Replace addresses in the body only (header length unchanged), fixing the total length."""
        (word,) = _LEN.unpack_from(frame, 4)
        body_start = 8 + (word & 0xFFFFFF)
        head, body = frame[:body_start], frame[body_start:]
        new_body = body
        for old, new in self.rewrite.items():
            new_body = new_body.replace(old, new)
        if new_body == body:
            return frame
        return _LEN.pack(len(head) - 4 + len(new_body)) + head[4:] + new_body

    def _record(self, frame: bytes, direction: str) -> None:
        try:
            (cmd,) = FrameDecoder(max_frame_size=len(frame) + 16).feed(frame)
            rec = describe(cmd, direction)
        except Exception as e:  # record what could not be decoded too: that is a finding
            rec = {"dir": direction, "t": round(time.time(), 3), "undecodable": str(e), "len": len(frame)}
        with self._lock:
            self.frames.append(rec)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    # -- queries -----------------------------------------------------------------

    def requests(self, code: int) -> list[dict]:
        with self._lock:
            return [f for f in self.frames if f.get("code") == code and not f.get("response")]

    def response_to(self, request: dict) -> dict | None:
        """The response frame carrying ``request``'s opaque, if seen."""
        with self._lock:
            for f in self.frames:
                if f.get("response") and f.get("opaque") == request["opaque"] and f["dir"] != request["dir"]:
                    return f
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target")
    ap.add_argument("--rewrite", action="append", default=[], help="OLD=NEW address in response bodies")
    ap.add_argument("--log")
    args = ap.parse_args()
    rw = dict(r.split("=", 1) for r in args.rewrite)
    p = FrameProxy(args.target, rw, args.log).start()
    print(p.addr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    p.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
