"""Shared fixtures of the Python package's tests (run by the README's test command)."""

import os
import signal
import subprocess
import sys
import time

import pytest

import rollway

# Started with SIGINT ignored (`nohup … &` from a script, some CI launchers), pytest passes that on to
# every process it starts, and a Python started so installs no KeyboardInterrupt handler: the Ctrl-C
# tests would then see no interrupt at all. A handled signal is reset to the default across exec, so
# handling it here gives every child Python's usual Ctrl-C, as from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def cartpole(tmp_path_factory):
    """A small recorded CartPole dataset (random agent, 40 episodes)."""
    out = tmp_path_factory.mktemp("data") / "cartpole"
    rollway.run(env="CartPole-v1", agent="random", episodes=40, seed=3, out=out, progress=False)
    return os.fspath(out)


@pytest.fixture(scope="session")
def pixels(tmp_path_factory):
    """A small recorded PixelMine dataset: image observations in frame files."""
    out = tmp_path_factory.mktemp("data") / "pixels"
    rollway.run(episodes=4, env_params={"size": 32, "max_steps": 50}, out=out, progress=False)
    return os.fspath(out)


def committed(out):
    """Episodes the dataset at ``out`` has committed (0 while there is none yet)."""
    try:
        return len(rollway.Dataset(out))
    except (rollway.RollwayError, OSError):
        return 0


def interrupt_once_committed(args, out, at_least=1, timeout=120):
    """Runs ``args`` (a Python child), sends it SIGINT once the dataset at ``out`` holds
    ``at_least`` committed episodes (a moment placed by progress, never by a clock, so the
    Ctrl-C lands mid-run on a fast machine and a slow one alike), and returns the finished
    process with its stdout and stderr."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while committed(out) < at_least and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    out_, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(args, p.returncode, out_, err)


def chromium():
    """Headless Chromium's command (scripts/deps.sh test installs it), or None: then a test of a page
    in a browser is skipped, except where ROLLWAY_REQUIRE_PEERS makes a missing peer a failure."""
    import shutil

    chrome = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
    if chrome is None:
        assert not os.environ.get("ROLLWAY_REQUIRE_PEERS"), "ROLLWAY_REQUIRE_PEERS is set but no chromium is installed"
    return chrome


def rollway_cli():
    exe = os.environ.get("ROLLWAY_BIN")
    if exe:
        return [exe]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "target"))
    path = os.path.join(target, "release", "rollway")
    if not os.path.exists(path):
        pytest.skip("the rollway binary is not built (cargo build --release)")
    return [path]


@pytest.fixture(scope="module")
def cluster():
    """A local multi-node Ray cluster on loopback, for the tests of one module: a head that runs
    no actors, and two worker nodes of one CPU each, the second with a fake GPU."""
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()  # a local Ray an earlier module's test left connected (rollway.ray starts one when none runs)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    c.add_node(num_cpus=1)
    c.add_node(num_cpus=1, num_gpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()


def titled_pids(prefix):
    """Processes whose command line starts with ``prefix`` (Ray titles an actor's process
    ``ray::Class`` while idle, ``ray::Class.method`` while running one)."""
    def title(pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read()
        except OSError:
            return b""

    return [int(d) for d in os.listdir("/proc") if d.isdigit() and title(d).startswith(prefix)]


@pytest.fixture
def reap():
    """Call it with each process a test starts: those still running when the test ends (a failed
    assertion, Ctrl-C) are killed, so none outlives its test."""
    procs = []
    yield procs.append
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.fixture(scope="session")
def s3_store(tmp_path_factory):
    """A real S3 server on loopback (moto's; issue 45) with the buckets ``rollway-test`` and
    ``my-bucket`` (the README's), this process's AWS_* variables pointing at it and a cache of
    its own; yields the endpoint URL."""
    pytest.importorskip("moto")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "s3_server.py")
    server = subprocess.Popen([sys.executable, script, "rollway-test", "my-bucket"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    endpoint = server.stdout.readline().strip()
    assert endpoint.startswith("http://127.0.0.1:"), endpoint
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "rollway-test", "AWS_SECRET_ACCESS_KEY": "rollway-test",
           "AWS_REGION": "us-east-1", "ROLLWAY_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield endpoint
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.kill()
    server.wait()
