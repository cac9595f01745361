"""Issue 33: the `rollway` command an installed package carries (the venv's bin/rollway and
`python -m rollway`): the binary's command line compiled into the extension, with its version,
exit codes, hosted envs started in the command's own interpreter, and Ctrl-C ending it with the
committed episodes kept."""

import os
import signal
import subprocess
import sys
import time

import pytest

import rollway
from conftest import rollway_cli

SCRIPT = os.path.join(os.path.dirname(sys.executable), "rollway")


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def test_issue33_the_script_and_python_m_report_the_package_version():
    for cmd in ([SCRIPT], [sys.executable, "-m", "rollway"]):
        o = run([*cmd, "--version"])
        assert o.returncode == 0, o.stderr
        assert o.stdout.strip() == f"rollway {rollway.__version__}"


def test_issue33_the_script_is_the_binarys_command_line():
    # Same registries, same help, same usage errors with the binary's exit code 2.
    binary = rollway_cli()
    for args in (["envs"], ["agents"], ["run", "--help"]):
        a, b = run([SCRIPT, *args]), run([*binary, *args])
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), args
    o = run([SCRIPT, "run", "--episodes", "many"])
    assert o.returncode == 2 and "invalid value 'many'" in o.stderr, o.stderr
    o = run([SCRIPT, "inspect", "/nonexistent/dataset"])
    assert o.returncode == 2 and "/nonexistent/dataset" in o.stderr, o.stderr


def test_issue33_hosted_envs_run_in_the_scripts_interpreter(tmp_path):
    # No $ROLLWAY_PYTHON and a PATH without this venv: the env host must still be this venv's Python.
    env = {k: v for k, v in os.environ.items() if k != "ROLLWAY_PYTHON"}
    env["PATH"] = "/usr/bin:/bin"
    o = run([SCRIPT, "run", "--env", "gym:CartPole-v1", "--agent", "random", "--episodes", "4", "--out", str(tmp_path / "d"), "-q"],
            env=env, cwd=tmp_path)
    assert o.returncode == 0, o.stderr
    assert len(rollway.Dataset(tmp_path / "d")) == 4


def test_issue33_ctrl_c_ends_the_script_and_keeps_committed_episodes(tmp_path):
    out = tmp_path / "d"
    p = subprocess.Popen([SCRIPT, "run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "100000000",
                          "--out", str(out), "--max-buffer-episodes", "64", "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    # rollway.json, not the directory: the writer makes the directory a moment before the dataset in it.
    while time.monotonic() < deadline and not ((out / "rollway.json").exists() and len(rollway.Dataset(out)) >= 64):
        time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("SIGINT did not end the command")
    assert p.returncode == -signal.SIGINT, (p.returncode, p.stderr.read())
    ds = rollway.Dataset(out)
    assert len(ds) >= 64
    report = ds.verify()
    assert not report["problems"], report
