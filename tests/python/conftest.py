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

# The suite runs in parallel processes (pytest-xdist, tests/run.sh), so "the env processes of this
# machine" are no longer this test's alone. Every process a test starts, directly or through a CLI
# run, a Ray node or a docs page, inherits this variable, naming the pytest process (a worker)
# that owns it: the leak checks look only at their own (`owned_pids`).
OWNER = "ROLLWAY_TEST_OWNER"
os.environ[OWNER] = str(os.getpid())
_OWNED = f"{OWNER}={os.getpid()}".encode() + b"\0"
# Each pytest process its own Ray directory: a Ray a test starts with no address records itself in
# $RAY_TMPDIR/ray/ray_current_cluster, which another process's `ray.init()` must not find and join.
# A worker inherits its controller's, which it replaces; one the user set is kept. Removed when the
# session ends (pytest_unconfigure), after the last cluster has stopped.
_RAY_PREFIX = "/tmp/rollway-ray-"
_RAY_TMPDIR = None
if os.environ.get("RAY_TMPDIR", _RAY_PREFIX).startswith(_RAY_PREFIX):
    _RAY_TMPDIR = os.environ["RAY_TMPDIR"] = f"{_RAY_PREFIX}{os.getpid()}"


def owned_pids(cmdline=lambda cmd: True):
    """Live (not zombie) processes that this pytest process started, directly or not, whose command
    line passes ``cmdline``. A process whose environment cannot be read (another user's) is not ours."""
    def read(pid, what):
        try:
            with open(f"/proc/{pid}/{what}", "rb") as f:
                return f.read()
        except OSError:
            return b""

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        cmd = read(pid, "cmdline")
        if not cmd or not cmdline(cmd):
            continue
        stat = read(pid, "stat").rsplit(b")", 1)[-1].split()
        if stat and stat[0] != b"Z" and _OWNED in read(pid, "environ"):
            found.append(int(pid))
    return found

# XLA's compiled programs, shared by the suite's processes through JAX's persistent cache and kept
# beside the build for the next run ($CARGO_TARGET_DIR's, or target/). Each process that steps a JAX
# env compiles its functions anew, and a Craftax world's take tens of seconds on 2 cores: the env
# processes, the replays and the examples compile the same ones. Every program is kept (no minimum
# compile time); the size limit turns on the cache's file lock, so two processes writing one entry
# take turns. Variables the user set are kept.
_TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "target")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.abspath(os.path.join(_TARGET, "jax-cache")))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(4 << 30))

# One math thread per process. The suite runs as several pytest processes on few cores, and a torch or
# OpenBLAS pool of one thread per core in each spins against the others': SB3's PPO test took 16 s of CPU
# alone and 48 s beside three other workers (issue 66). Child processes (docs pages, Ray workers) inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Fixtures that start something costly once per module (a Ray cluster, the docs site's build): under
# pytest-xdist (tests/run.sh) a module's tests that use one go to one worker, as a group, so it starts
# once, as in a serial run, instead of once in every worker that draws one of them.
PER_MODULE = ("cluster", "nodes", "site")


def pytest_unconfigure(config):
    if _RAY_TMPDIR:
        import shutil

        shutil.rmtree(_RAY_TMPDIR, ignore_errors=True)


def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: a test of many CPU-seconds; the suite starts it first, so that "
                                       "parallel workers do not finish on it (tests/run.sh runs pytest-xdist)")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Heavy tests (and the groups they are in) first, the rest in their order; the per-module fixtures'
    tests grouped. The sort is stable, so a module's tests keep their order among themselves."""
    heavy_groups = set()
    for item in items:
        shared = [f for f in PER_MODULE if f in item.fixturenames]
        if shared:
            group = f"{item.module.__name__}:{shared[0]}"
            item.add_marker(pytest.mark.xdist_group(group))
            if item.get_closest_marker("heavy"):
                heavy_groups.add(group)
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark and mark.args and mark.args[0] in heavy_groups:
            item.add_marker(pytest.mark.heavy)
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


# A test over a minute says why in its docstring (issue 66); the summary names any that does not.
SAYS_WHY_OVER_S = 60


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        # user_properties travel from an xdist worker to the summary; the item does not.
        rep.user_properties.append(("docstring", bool(getattr(item, "function", None) and item.function.__doc__)))


def pytest_terminal_summary(terminalreporter):
    reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])]
    unsaid = sorted(f"{r.duration:.0f}s {r.nodeid}" for r in reports
                    if r.when == "call" and r.duration > SAYS_WHY_OVER_S and not dict(r.user_properties).get("docstring"))
    if unsaid:
        terminalreporter.write_sep("=", f"tests over {SAYS_WHY_OVER_S} s whose docstring does not say why", yellow=True)
        for line in unsaid:
            terminalreporter.write_line(line)


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


def peer(module: str):
    """``module``, a peer package that tests check rollway against (PettingZoo, JAX, VMAS, polars, …):
    where it is not installed its tests are skipped, except where ROLLWAY_REQUIRE_PEERS (CI) makes a
    missing peer a failure, so that a broken venv cannot turn a suite green by skipping."""
    import importlib

    if os.environ.get("ROLLWAY_REQUIRE_PEERS"):
        return importlib.import_module(module)
    return pytest.importorskip(module)


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
    """This test process's processes whose command line starts with ``prefix`` (Ray titles an
    actor's process ``ray::Class`` while idle, ``ray::Class.method`` while running one)."""
    return owned_pids(lambda cmd: cmd.startswith(prefix))


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
