"""A TCP proxy in front of the loopback S3 server that injects the faults of a real network and
a busy store (issue 45), as toxiproxy does: the server behind it is real, only the path is not.

    python fault_proxy.py UPSTREAM_PORT

Prints its own port on its first line, then takes commands on stdin, one per line:
  down SECONDS   drop every open connection and reset every new one (a store restarting) for
                 SECONDS, and on until at least one new connection was reset (at most 60 s more)
  slowdown N     answer the next N requests `503 SlowDown` instead of passing them on
  chaos SEED N   from now on, each request meets a fault with probability 1/N, drawn from a
                 stream seeded by SEED: a burst of `503 SlowDown` (1 to 3 answers), its
                 connection reset before it is passed on, or 50 to 300 ms of added latency
  latency MS     every request waits MS more before it is passed on
  stall WHAT K   the K-th request from now on of kind WHAT (as `counts` names them, e.g.
                 "PUT staged") is passed on cut short: its head and half its body, then
                 nothing more, and no answer; so the writer that sent it is mid-upload for
                 good, for the test to kill there
  stalled        print how many requests have been held that way so far
  stats          print "slowdowns_left N reset M": what is still to inject, and the
                 connections `down` has dropped or reset so far
  counts         print the requests passed on so far as JSON, by "METHOD what" (what: the
                 dataset's part the key is in: index, steps, frames, staged, claims, lease,
                 metadata; or list), and the faults injected
Prints "ok" after each other command has taken effect, and exits when stdin closes.

From a test or a bench, ``Client(store_endpoint)`` runs it as a child process and speaks
these commands (test_s3.py, test_store_stress.py, bench/store_requests.py).
"""

import asyncio
import collections
import json
import os
import random
import subprocess
import sys
from typing import Dict

SLOWDOWN = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
            b"<Message>Please reduce your request rate.</Message></Error>")


class Proxy:
    def __init__(self, upstream: int):
        self.upstream, self.server, self.port = upstream, None, 0
        self.open: set = set()
        self.slowdowns = self.reset = 0
        self.refusing = False
        self.chaos, self.rng, self.latency = 0, random.Random(0), 0.0
        self.counts: collections.Counter = collections.Counter()
        self.stall_what, self.stall_left, self.stalled = "", 0, 0  # the `stall` command's

    async def listen(self):
        self.server = await asyncio.start_server(self.client, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def request(self, reader):
        """One HTTP/1.1 request (head and Content-Length body), or b"" at EOF."""
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return head + (await reader.readexactly(length) if length else b"")

    async def client(self, reader, writer):
        if self.refusing:
            writer.transport.abort()
            self.reset += 1
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        self.open.update([writer, up_writer])
        back = asyncio.ensure_future(self.pipe(up_reader, writer))
        try:
            while True:
                req = await self.request(reader)
                if await self.faulted(writer):
                    return
                if self.slowdowns > 0:
                    self.slowdowns -= 1
                    writer.write(b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(SLOWDOWN) + SLOWDOWN)
                    await writer.drain()
                    continue
                kind = what(req)
                self.counts[kind] += 1
                if kind == self.stall_what and self.stall_left > 0:
                    self.stall_left -= 1
                    if self.stall_left == 0:
                        await self.hold(req, reader, up_writer)
                        return
                up_writer.write(req)
                await up_writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            back.cancel()
            for w in (writer, up_writer):
                self.open.discard(w)
                w.close()

    async def hold(self, req, reader, up_writer):
        """Passes on ``req``'s head and half its body, then nothing more and no answer until the
        client goes away (killed); closing the upstream connection then cuts the upload short."""
        head, _, body = req.partition(b"\r\n\r\n")
        up_writer.write(head + b"\r\n\r\n" + body[: len(body) // 2])
        await up_writer.drain()
        self.stalled += 1
        while await reader.read(1 << 16):
            pass

    async def faulted(self, writer) -> bool:
        """A `chaos` fault for this request; True when its connection was reset."""
        if self.latency:
            await asyncio.sleep(self.latency)
        if not self.chaos or self.rng.randrange(self.chaos):
            return False
        kind = self.rng.choice(["slowdown", "reset", "latency"])
        self.counts[f"fault {kind}"] += 1
        if kind == "slowdown":
            self.slowdowns += self.rng.randint(1, 3)
        elif kind == "latency":
            await asyncio.sleep(self.rng.uniform(0.05, 0.3))
        else:
            writer.transport.abort()
            self.reset += 1
            return True
        return False

    async def pipe(self, reader, writer):
        try:
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass

    async def down(self, seconds: float):
        self.refusing = True
        for w in list(self.open):
            w.transport.abort()
            self.reset += 1
        self.open.clear()
        await asyncio.sleep(seconds)
        for _ in range(1200):
            if self.reset:
                break
            await asyncio.sleep(0.05)
        self.refusing = False


class Client:
    """This proxy as a child process in front of the store at ``upstream`` (its endpoint URL)."""

    def __init__(self, upstream: str):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), upstream.rsplit(":", 1)[1]],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.endpoint = f"http://127.0.0.1:{self.p.stdout.readline().strip()}"

    def send(self, command: str) -> str:
        """Sends one command; its answer line."""
        self.start(command)
        return self.p.stdout.readline().strip()

    def start(self, command: str) -> None:
        """Sends a command whose answer comes only once it is over (``down``), not waiting for it."""
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()

    def counts(self) -> Dict[str, int]:
        """The requests passed on so far, and the faults injected (the `counts` command)."""
        return json.loads(self.send("counts"))

    def close(self) -> None:
        self.p.kill()
        self.p.wait()


def what(req: bytes) -> str:
    """`METHOD part` of a request: which part of a dataset its key is in."""
    method, target = req.split(b" ", 2)[:2]
    path, _, query = target.decode().partition("?")
    if method == b"GET" and ("list-type" in query or "prefix=" in query):
        return "LIST"
    parts = [("/.tmp/publish/", "staged"), ("/.tmp/claims/", "claims"), ("/.tmp/lease.json", "lease"), ("/index/", "index"),
             ("/steps/", "steps"), ("/frames/", "frames"), ("/rollway.json", "metadata")]
    part = next((name for key, name in parts if key in path), "other")
    # A server-side copy is a PUT with x-amz-copy-source.
    copy = b"x-amz-copy-source" in req.split(b"\r\n\r\n", 1)[0].lower()
    return f"{'COPY' if copy else method.decode()} {part}"


async def main():
    proxy = Proxy(int(sys.argv[1]))
    await proxy.listen()
    print(proxy.port, flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "down":
            await proxy.down(float(arg))
        elif cmd == "slowdown":
            proxy.slowdowns += int(arg)
        elif cmd == "chaos":
            seed, n = arg.split()
            proxy.rng, proxy.chaos = random.Random(int(seed)), int(n)
        elif cmd == "latency":
            proxy.latency = float(arg) / 1000
        elif cmd == "stall":
            kind, _, k = arg.rpartition(" ")
            proxy.stall_what, proxy.stall_left = kind, int(k)
        elif cmd == "stalled":
            print(proxy.stalled, flush=True)
            continue
        elif cmd == "counts":
            print(json.dumps(dict(proxy.counts)), flush=True)
            continue
        elif cmd == "stats":
            print(f"slowdowns_left {proxy.slowdowns} reset {proxy.reset}", flush=True)
            continue
        print("ok", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
