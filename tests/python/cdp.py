"""A page in headless Chromium, driven over the DevTools protocol (CDP): what a reader's browser does
with the docs site, including what runs after the load event (the search's web worker), which
`chromium --dump-dom` does not wait for. Console errors and uncaught exceptions are collected."""

from __future__ import annotations

import json
import re
import subprocess
import time
from typing import Any, Dict, List, Optional

from websockets.sync.client import connect


class Browser:
    def __init__(self, chrome: str, profile: str):
        self.proc = subprocess.Popen([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                      "--disable-background-networking", "--remote-debugging-port=0",
                                      f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        url = None
        for line in self.proc.stderr:
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "Chromium did not start its DevTools endpoint"
        self.ws = connect(url, max_size=None, open_timeout=30).__enter__()
        self.next_id = 0
        self.errors: List[str] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=True)

    def call(self, method: str, params: Optional[Dict[str, Any]] = None, session: bool = False) -> Dict[str, Any]:
        self.next_id += 1
        msg: Dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv(timeout=60))
            if reply.get("id") == self.next_id:
                assert "error" not in reply, f"{method}: {reply['error']}"
                return reply.get("result", {})
            self.event(reply)

    def event(self, e: Dict[str, Any]) -> None:
        p = e.get("params", {})
        if e.get("method") == "Runtime.exceptionThrown":
            self.errors.append(p["exceptionDetails"].get("text", "") + " " + json.dumps(p["exceptionDetails"].get("exception", {}).get("description")))
        elif e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
        elif e.get("method") == "Log.entryAdded" and p["entry"].get("level") == "error":
            self.errors.append(f"log: {p['entry'].get('text')} ({p['entry'].get('url')})")

    def open(self, url: str) -> None:
        self.call("Page.navigate", {"url": url}, session=True)

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        return r.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        """Evaluates `expression` until it is truthy (returned), or `timeout` seconds pass (None)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        return None

    def screenshot(self, path: str) -> None:
        import base64

        data = self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.ws.__exit__(None, None, None)
        finally:
            self.proc.kill()
            self.proc.wait()
