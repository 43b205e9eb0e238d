"""A real Prometheus as a test peer (Debian's ``prometheus`` package):
the metrics test and the dashboard's picture
(``benchmarks/fleet_dashboard.py``) scrape ``serve`` processes with it
and ask it PromQL."""

from __future__ import annotations

import os
import shutil
from typing import Any

import requests

from baremetal_allocclient.tests.fixtures.peers import Peer

BINARY = shutil.which("prometheus")
SCRAPE = 1  # seconds between two scrapes of a target


class Prometheus(Peer):
    """Prometheus scraping ``targets`` (host:port) every SCRAPE s."""

    name = "prometheus"
    ready_path = "/-/ready"

    def __init__(self, targets: list[str]) -> None:
        super().__init__()
        self.config = os.path.join(self.workdir, "prometheus.yml")
        listed = ", ".join(f"'{target}'" for target in targets)
        with open(self.config, "w", encoding="utf-8") as out:
            out.write(f"global:\n  scrape_interval: {SCRAPE}s\n"
                      f"  scrape_timeout: {SCRAPE}s\n"
                      "scrape_configs:\n  - job_name: baremetal-alloc\n"
                      f"    static_configs:\n      - targets: [{listed}]\n")

    def command(self, port: int) -> list[str]:
        assert BINARY is not None
        return [BINARY, f"--config.file={self.config}",
                f"--web.listen-address=127.0.0.1:{port}",
                f"--storage.tsdb.path={self.workdir}/data",
                "--log.level=warn"]

    def query(self, promql: str) -> dict[str, float]:
        """The instant vector ``promql`` answers: its samples by their
        labels (``k=v,...``, sorted), as floats."""
        answer = requests.get(self.endpoint + "/api/v1/query",
                              params={"query": promql}, timeout=30).json()
        assert answer["status"] == "success", answer
        return {",".join(f"{k}={v}" for k, v in sorted(
                    sample["metric"].items())): float(sample["value"][1])
                for sample in answer["data"]["result"]}

    def query_range(self, promql: str, start: float, end: float,
                    step: float) -> list[dict[str, Any]]:
        """The range vector ``promql`` answers between ``start`` and
        ``end`` (Unix times) every ``step`` s: Prometheus's ``result``."""
        answer = requests.get(
            self.endpoint + "/api/v1/query_range", timeout=60,
            params={"query": promql, "start": start, "end": end,
                    "step": step}).json()
        assert answer["status"] == "success", answer
        return list(answer["data"]["result"])
