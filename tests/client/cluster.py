"""Real NameServer and broker processes for client tests (loopback, config files in a tmp dir)."""

from __future__ import annotations

from pathlib import Path

from tests.support import Proc, free_port


class NamesrvProc:
    def __init__(self, root: Path, name: str = "ns"):
        self.root = Path(root)
        self.name = name
        self.port = free_port()
        self.conf = self.root / f"{name}.conf"
        self.conf.write_text(f"listenPort={self.port}\nkvConfigPath={self.root / name / 'kvConfig.json'}\n"
                             f"configStorePath={self.root / name / 'namesrv.properties'}\n")
        self.proc: Proc | None = None
        self.starts = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> NamesrvProc:
        self.starts += 1
        self.proc = Proc(f"{self.name}-{self.starts}", ["mqnamesrv", "-c", str(self.conf)], self.root)
        self.proc.wait_port(self.port)
        return self

    def stop(self) -> int:
        return self.proc.stop() if self.proc else 0


class BrokerProc:
    def __init__(self, root: Path, name: str, namesrv: str, **extra):
        self.root = Path(root)
        self.name = name
        self.port = free_port()
        self.props = {
            "brokerClusterName": "TestCluster",
            "brokerName": name,
            "listenPort": str(self.port),
            "brokerIP1": "127.0.0.1",
            "namesrvAddr": namesrv,
            "storePathRootDir": str(self.root / f"{name}-store"),
            "mappedFileSizeCommitLog": str(16 * 1024 * 1024),
            "mappedFileSizeConsumeQueue": str(60000),
            "maxMessageSize": str(5 * 1024 * 1024),
            **{k: str(v) for k, v in extra.items()},
        }
        self.conf = self.root / f"{name}.conf"
        self.conf.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        self.proc: Proc | None = None
        self.starts = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> BrokerProc:
        self.starts += 1
        self.proc = Proc(f"{self.name}-{self.starts}", ["mqbroker", "-c", str(self.conf)], self.root)
        self.proc.wait_port(self.port)
        return self

    def stop(self) -> int:
        return self.proc.stop() if self.proc else 0


class Cluster:
    """NameServers and brokers started together; ``stop()`` ends them all."""

    def __init__(self, root: Path, brokers: int = 1, namesrvs: int = 1, **broker_extra):
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        self.namesrvs = [NamesrvProc(root, f"ns{i}").start() for i in range(namesrvs)]
        self.brokers = [BrokerProc(root, f"broker{chr(ord('a') + i)}", self.namesrv_addr, **broker_extra).start()
                        for i in range(brokers)]

    @property
    def namesrv_addr(self) -> str:
        return ";".join(n.addr for n in self.namesrvs)

    def stop(self) -> None:
        for p in [*self.brokers, *self.namesrvs]:
            try:
                p.stop()
            except Exception:
                if p.proc:
                    p.proc.kill()
