"""Batched simulators (issue 69): JAX envs of the gymnax interface, a block of them stepped as one
jitted, vmapped call.

The golden data is the env's own functions: each recorded episode is played again with gymnax's (or
Craftax's) ``reset_env`` and ``step_env``, jitted and vmapped as users run them, from the episode's
recorded seed by the key discipline ``rollway.batched`` documents, with the recorded actions; every
observation, reward and end must equal what rollway recorded, bit for bit.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import rollway
from conftest import peer

jax = peer("jax")
peer("gymnax")
peer("craftax")

from rollway.batched import key_of, make_sim, strong  # noqa: E402

CASES = {
    "cartpole": ("gymnax", "CartPole-v1", {"max_steps_in_episode": 15}),
    "breakout_minatar": ("gymnax", "Breakout-MinAtar", {}),
    "craftax_classic": ("craftax", "Craftax-Classic-Symbolic-v1", {"max_timesteps": 120}),
}


def replay(kind: str, name: str, params: dict, seed: int, actions: np.ndarray):
    """The episode in the env's own functions: observations [T + 1], rewards, the last step's
    (terminated, truncated) as gymnax's step reports them (Craftax: a time-limit end alive is
    truncated), and its info (gymnax's discount, Craftax's achievements)."""
    return replay_in(*make_sim(kind, name, params), kind, seed, actions)


def replay_in(env, env_params, kind: str, seed: int, actions: np.ndarray):
    """:func:`replay` in an env already made."""
    import jax.numpy as jnp

    reset = jax.jit(jax.vmap(lambda k: env.reset_env(k, env_params)))

    def one(key, state, action):
        key, k = jax.random.split(key)
        k_step, _ = jax.random.split(k)
        obs, state, reward, done, info = env.step_env(k_step, state, action, env_params)
        return key, obs, state, reward, done, info

    step = jax.jit(jax.vmap(one))
    key, k = jax.random.split(jnp.asarray(key_of(seed)))
    obs, state = reset(k[None])
    # Reset leaves some leaves weakly typed that step makes strong: the same values, strongly typed,
    # so that jit compiles step once (a Craftax step is ~10 s of XLA).
    state = strong(jax, state)
    key = key[None]
    seen, rewards, done = [np.asarray(obs[0])], [], False
    for a in actions:
        key, obs, state, reward, d, info = step(key, state, jnp.asarray([a], jnp.int32))
        seen.append(np.asarray(obs[0]))
        rewards.append(float(reward[0]))
        done = bool(d[0])
    if kind == "craftax":
        truncated = done and int(state.timestep[0]) >= env_params.max_timesteps and float(state.player_health[0]) > 0
    else:
        truncated = bool(env.is_truncated(jax.tree.map(lambda x: x[0], state), env_params))
    info = {k: np.asarray(v)[0].tolist() for k, v in info.items()}
    return np.stack(seen), np.array(rewards), (done and not truncated, truncated), info


@pytest.mark.parametrize("case,host,front", [("cartpole", "process", "run"), ("breakout_minatar", "inline", "run"),
                                             ("breakout_minatar", "process", "Rollout"),
                                             pytest.param("craftax_classic", "inline", "run", marks=pytest.mark.heavy)])
def test_issue69_recorded_jax_episodes_equal_the_envs_own_steps(tmp_path, case, host, front):
    """Each recorded episode, played again in the env's own jitted functions, is equal bit for bit:
    from ``rollway.run`` (episodes from a queue) and from a recording ``Rollout`` (every slot
    stepped each round, the ended ones reset in a round of their own).
    Craftax takes about a minute here: XLA compiles its world's reset and step on the CPU (for the
    run's block and for the replay), so it runs one env a block and three episodes."""
    kind, name, params = CASES[case]
    out = tmp_path / "ds"
    craftax = kind == "craftax"
    if front == "run":
        s = rollway.run(env=f"{kind}:{name}", env_params=params, agent="random", episodes=3 if craftax else 6, seed=3,
                        out=out, envs_per_worker=1 if craftax else 4, host=host, progress=False)
        assert s.episodes == (3 if craftax else 6)
    else:
        with rollway.Rollout(f"{kind}:{name}", "random", num_envs=4, steps_per_fragment=40, seed=3, out=out,
                             env_params=params, host=host) as r:
            r.collect()
    ds = rollway.Dataset(out)
    assert len(ds) >= (3 if craftax else 6)
    assert ds.verify()["problems"] == []
    ends = set()
    for e in ds:
        obs, rewards, (term, trunc), info = replay(kind, name, params, e.seed, e.actions)
        np.testing.assert_array_equal(e.observations, obs, err_msg=f"{name} seed {e.seed}")
        np.testing.assert_array_equal(e.rewards, rewards)
        assert (bool(e.terminated[-1]), bool(e.truncated[-1])) == (term, trunc)
        assert e.info == info
        assert not e.terminated[:-1].any() and not e.truncated[:-1].any()
        ends.add((term, trunc))
    if case == "cartpole":  # a random CartPole falls within 15 steps or is cut there: both ends are seen
        assert ends == {(True, False), (False, True)}, ends


def test_issue69_a_rollout_of_a_jax_env_gives_fragments_and_final_observations():
    """Fragments of a JAX env: [T + 1, N] observations; where an episode ended, final_obs holds the
    step's own observation (gymnax's step would have handed back the next episode's first) and the
    next row is a new episode's start."""
    with rollway.Rollout("gymnax:CartPole-v1", "random", num_envs=8, steps_per_fragment=64, seed=1,
                         env_params={"max_steps_in_episode": 30}) as r:
        frag = r.collect()
    assert frag.obs.shape == (65, 8, 4)
    ends = np.argwhere(frag.dones)
    assert len(ends) == len(frag.final_obs) > 0
    assert (frag.first[1:] == frag.dones).all()
    # The final observation is not the reset's: CartPole starts within ±0.05 on every coordinate.
    assert (np.abs(frag.final_obs).max(axis=1) > 0.05).all()
    assert (np.abs(frag.obs[1:][frag.dones]).max(axis=1) <= 0.05).all()


def test_issue69_env_params_that_are_not_the_envs_are_an_input_error_naming_them():
    with pytest.raises(rollway.InputError, match=r"env params \['max_steps'\] are not fields of its params; they are \[.*'max_steps_in_episode'"):
        with rollway.Rollout("gymnax:CartPole-v1", "random", num_envs=2, env_params={"max_steps": 5}) as r:
            r.collect()


def test_issue69_jax_missing_is_an_error_naming_the_fix():
    code = ("import sys; sys.modules['jax'] = None\n"
            "import rollway\n"
            "try:\n"
            "    rollway.Rollout('gymnax:CartPole-v1', 'random', num_envs=2, host='inline')\n"
            "except rollway.InputError as e:\n"
            "    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "JAX envs need jax" in p.stdout and "pip install jax" in p.stdout, p.stdout + p.stderr


@pytest.mark.heavy
def test_issue69_craftax_pixels_as_uint8_frames_are_recorded_as_video(tmp_path):
    """pixels='uint8' gives Craftax's [0, 1] float images as uint8 frames, round(x × 255): a frame
    leaf, recorded as H.264 video (63×63: odd sides, stored padded and read back at their own size).
    The decoded frames stay within the codec's loss of the env's own images. Craftax makes its textures once (cached in its package) and XLA compiles its world: about
    a minute here."""
    out = tmp_path / "ds"
    params = {"pixels": "uint8", "max_timesteps": 40}
    rollway.run(env="craftax:Craftax-Classic-Pixels-v1", env_params=params, agent="random", episodes=2, seed=5,
                out=out, envs_per_worker=1, frame_media="h264", progress=False)
    ds = rollway.Dataset(out)
    assert ds.observation_space.dtype == np.uint8 and ds.observation_space.shape == (63, 63, 3)
    assert any(p.suffix == ".mp4" for p in out.rglob("*")), "the frames went to video files"
    e = ds[0]
    images, _, _, info = replay("craftax", "Craftax-Classic-Pixels-v1", {"max_timesteps": 40}, e.seed, e.actions)
    assert e.info == info
    expected = np.round(np.clip(images, 0, 1) * 255)
    assert e.observations.shape == expected.shape
    # H.264's 4:2:0 chroma costs most on Craftax's 7-pixel tiles: about 26 dB (lz4 gives them back exactly);
    # a wrong frame scores about 12.
    mse = ((e.observations.astype(float) - expected) ** 2).reshape(len(expected), -1).mean(1)
    psnr = 10 * np.log10(255.0 ** 2 / np.maximum(mse, 1e-9))
    assert psnr.min() > 23 and psnr.mean() > 25, psnr


@pytest.mark.heavy
def test_issue69_the_craftax_ppo_example_learns_to_unlock_more_achievements():
    """rollway.examples.ppo_craftax (PureJaxRL's Craftax recipe, the learner in torch) for 40 updates of
    128 envs × 32 steps: the achievements unlocked an episode rise from the first 10 updates' to the last
    10's (2.74 to 3.92 at seed 1, 2.77 to 4.02 at seed 2). The same run with a learning rate of 0, a
    policy that never changes, went 2.14 to 2.38 over the same windows: the early windows see only the
    episodes that ended soon."""
    from rollway.examples.ppo_craftax import train

    r = train(total_steps=40 * 128 * 32, envs=128, steps=32, width=128, seed=1, log=False)
    assert r["steps"] == 40 * 128 * 32 and r["episodes"] > 500, r
    assert r["last_achievements"] > r["first_achievements"] + 0.8 and r["last_achievements"] > 3.2, r


def walk_env(traceable: bool = True):
    """A user's own JAX env of the gymnax interface, not gymnax's. A walk on a line: observation [position, steps], action 0
    steps left and 1 right, reward the new position; terminated at |position| = 3, truncated by
    ``is_truncated`` at ``params["limit"]`` steps; a reset starts at -1, 0 or 1, drawn from its key.
    ``traceable=False``: its step branches in Python on the action, which jax cannot trace."""
    import jax.numpy as jnp
    from gymnax.environments import spaces

    class Walk:
        name = "Walk-v0"
        default_params = {"limit": 12}

        def observation_space(self, params):
            return spaces.Box(-100.0, 100.0, (2,), jnp.float32)

        def action_space(self, params):
            return spaces.Discrete(2)

        def reset_env(self, key, params):
            state = {"x": jax.random.randint(key, (), -1, 2), "t": jnp.zeros((), jnp.int32)}
            return self.obs(state), state

        def step_env(self, key, state, action, params):
            move = (2 * action - 1) if traceable else (1 if action == 1 else -1)
            state = {"x": state["x"] + move, "t": state["t"] + 1}
            done = (jnp.abs(state["x"]) >= 3) | self.is_truncated(state, params)
            return self.obs(state), state, state["x"].astype(jnp.float32), done, {}

        def is_truncated(self, state, params):
            return (state["t"] >= params["limit"]) & (jnp.abs(state["x"]) < 3)

        def obs(self, state):
            return jnp.stack([state["x"], state["t"]]).astype(jnp.float32)

    return Walk()


def test_issue69_a_block_compiles_its_step_once_where_reset_leaves_weakly_typed_leaves():
    """Craftax's reset leaves Python scalars in its state (weakly typed under jit) that its step makes
    strong, and jit compiles a function once per type of its arguments: a block stepping what reset
    made would compile its step twice (a Craftax step is ~10 s of XLA). The walk here does the same
    with its step count. rollway's jitted calls hand every state back strongly typed: one compile."""
    import jax.numpy as jnp
    from rollway.batched import RESET, STEP, JaxSim

    walk = type(walk_env())

    class Weak(walk):
        def reset_env(self, key, params):
            obs, state = super().reset_env(key, params)
            return obs, {"x": state["x"], "t": 0}

        def step_env(self, key, state, action, params):
            obs, state, reward, done, info = super().step_env(key, state, action, params)
            return obs, {"x": state["x"], "t": state["t"].astype(jnp.int32)}, reward, done, info

    n = 4
    block = JaxSim.of(Weak(), "jax:Weak").block(n)
    seeds = np.arange(n, dtype=np.uint64).tobytes()
    block.round(np.full(n, RESET, np.uint8).tobytes(), seeds, np.zeros(n, np.int64).tobytes())
    for right in (1, 0, 1):  # from -1, 0 or 1: right, left, right never reaches ±3
        _, _, _, flags = block.round(np.full(n, STEP, np.uint8).tobytes(), seeds, np.full(n, right, np.int64).tobytes())
        assert not flags.any()
    assert block._step_all._cache_size() == 1


def test_issue69_a_round_stepping_some_slots_runs_the_blocks_one_step_and_keeps_the_others():
    """A round where some slots idle or reset while the others step runs the block's one compiled
    step (the env's step is traced once: a Craftax step is ~10 s of XLA) and puts back the state of
    the slots that were not to step. The first state comes from the block's own reset program: the
    env's reset is only ever traced, never run op by op (~8 s of small compiles for Craftax)."""
    from rollway.batched import IDLE, RESET, STEP, JaxSim

    walk = type(walk_env())
    calls = {"step": 0, "eager_resets": 0}

    class Counted(walk):
        def reset_env(self, key, params):
            calls["eager_resets"] += not isinstance(key, jax.core.Tracer)
            return super().reset_env(key, params)

        def step_env(self, key, state, action, params):
            calls["step"] += 1
            return super().step_env(key, state, action, params)

    n = 4
    block = JaxSim.of(Counted(), "jax:Counted").block(n)
    seeds = np.arange(n, dtype=np.uint64).tobytes()

    def round_(ops, right):
        obs, _, _, flags = block.round(np.array(ops, np.uint8).tobytes(), seeds, np.full(n, right, np.int64).tobytes())
        assert not flags.any()
        return np.asarray(obs).view(np.float32).reshape(len(obs), 2)

    start = round_([RESET] * n, 0)
    assert calls["eager_resets"] == 0
    traced = calls["step"]
    after = round_([STEP] * n, 1)
    np.testing.assert_array_equal(after, start + [1, 1])
    assert calls["step"] == traced + 1
    # Slot 1 idles and slot 3 starts again from its seed while slots 0 and 2 step left.
    mixed = round_([STEP, IDLE, STEP, RESET], 0)
    np.testing.assert_array_equal(mixed[[0, 2]], start[[0, 2]] + [0, 2])
    np.testing.assert_array_equal(mixed[3], start[3])
    last = round_([STEP] * n, 0)
    np.testing.assert_array_equal(last, [start[0] + [-1, 3], start[1] + [0, 2], start[2] + [-1, 3], start[3] + [-1, 1]])
    assert calls["step"] == traced + 1, "the mixed round compiled a step of its own"


def test_issue69_a_round_stepping_some_slots_gives_jax_nothing_to_warn_of():
    """JAX warns (a UserWarning in the user's run) of a buffer given up to a call that it could
    not use: the mixed round gives up only the state it writes over."""
    from rollway.batched import IDLE, RESET, STEP, JaxSim

    n = 4
    block = JaxSim("gymnax", "Breakout-MinAtar", {}).block(n)
    seeds, acts = np.arange(n, dtype=np.uint64).tobytes(), np.zeros(n, np.int64).tobytes()
    block.round(np.full(n, RESET, np.uint8).tobytes(), seeds, acts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obs, rows, _, _ = block.round(np.array([STEP, IDLE, STEP, RESET], np.uint8).tobytes(), seeds, acts)
    assert len(obs) == n and rows is None  # a row a slot, the reset row over the step's


@pytest.mark.parametrize("host", ["process", "inline"])
def test_issue69_a_users_own_jax_env_is_recorded_equal_to_its_own_steps(tmp_path, host):
    """A factory returning any env of the gymnax interface (here one written without gymnax's base
    class) is vmapped and jitted as gymnax's are: each recorded episode, played again in the env's
    own jitted functions, is equal; both ends (the walk's, its time limit's) are recorded apart."""
    import cloudpickle

    out = tmp_path / "ds"
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # env processes cannot import this test module
    try:
        s = rollway.run(env=walk_env, agent="random", episodes=12, seed=5, out=out, envs_per_worker=4, host=host,
                        progress=False)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert s.episodes == 12
    ds = rollway.Dataset(out)
    assert ds.metadata["env"]["id"] == "jax:Walk-v0" and ds.verify()["problems"] == []
    env = walk_env()
    ends = set()
    for e in ds:
        obs, rewards, end, info = replay_in(env, env.default_params, "jax", e.seed, e.actions)
        np.testing.assert_array_equal(e.observations, obs, err_msg=f"seed {e.seed}")
        np.testing.assert_array_equal(e.rewards, rewards)
        assert (bool(e.terminated[-1]), bool(e.truncated[-1])) == end
        ends.add(end)
    assert ends == {(True, False), (False, True)}, ends


def test_issue69_gymnax_makes_pair_as_a_factory_steps_as_its_named_env():
    """``lambda: gymnax.make(NAME)`` (an env and its params, as gymnax hands them) gives the same
    fragments as ``"gymnax:NAME"``: one path for named and user-made JAX envs."""
    import gymnax

    frags = []
    for env in (lambda: gymnax.make("CartPole-v1"), "gymnax:CartPole-v1"):
        with rollway.Rollout(env, "random", num_envs=4, steps_per_fragment=40, seed=3, host="inline") as r:
            frags.append(r.collect())
    a, b = frags
    assert a.dones.any()
    for x, y in ((a.obs, b.obs), (a.actions, b.actions), (a.rewards, b.rewards), (a.dones, b.dones)):
        np.testing.assert_array_equal(x, y)


def test_issue69_a_jax_env_that_jax_cannot_trace_is_an_input_error_naming_the_fix():
    with pytest.raises(rollway.InputError, match=r"jax:Walk-v0: its step_env cannot be traced by jax.jit \(TracerBoolConversionError.*jax.lax.cond instead of a Python `if`"):
        rollway.Rollout(lambda: walk_env(traceable=False), "random", num_envs=2, host="inline")


@pytest.mark.parametrize("env,opts", [("gymnax:CartPole-v1", ["--env-opt", "max_steps_in_episode=15"]),
                                      ("test_batched:walk_env", [])])
def test_issue69_the_command_line_records_jax_envs_equal_to_their_own_steps(tmp_path, env, opts):
    """``rollway run --env gymnax:NAME`` and ``--env module:callable`` making a user's own JAX env:
    each recorded episode equals the env's own jitted steps, as from Python."""
    import os

    from conftest import rollway_cli

    out = tmp_path / "ds"
    path = os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), os.environ.get("PYTHONPATH", "")])
    p = subprocess.run(rollway_cli() + ["run", "--env", env, *opts, "--agent", "random", "--episodes", "6", "--seed", "4",
                                        "--out", str(out), "-q"],
                       env=dict(os.environ, ROLLWAY_PYTHON=sys.executable, PYTHONPATH=path), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    ds = rollway.Dataset(out)
    assert len(ds) == 6 and ds.verify()["problems"] == []
    own = walk_env() if env.startswith("test_") else None
    for e in ds:
        if own is None:
            obs, rewards, end, _ = replay("gymnax", "CartPole-v1", {"max_steps_in_episode": 15}, e.seed, e.actions)
        else:
            obs, rewards, end, _ = replay_in(own, own.default_params, "jax", e.seed, e.actions)
        np.testing.assert_array_equal(e.observations, obs, err_msg=f"{env} seed {e.seed}")
        np.testing.assert_array_equal(e.rewards, rewards)
        assert (bool(e.terminated[-1]), bool(e.truncated[-1])) == end


def test_issue69_a_jax_steps_observations_reach_the_rows_without_a_copy_in_python():
    """The copies a JAX step makes on its way to rollway's rows: none in Python (the block reads the
    jitted call's output buffer in place, ``np.asarray`` of a CPU array being a view of it), then one,
    into the rows, in Rust."""
    from rollway.batched import JaxBlock

    out = jax.jit(lambda x: x * 2.0)(jax.numpy.arange(12.0, dtype=jax.numpy.float32).reshape(3, 4))
    rows = JaxBlock._bytes(out)
    assert rows.shape == (3, 16) and rows.dtype == np.uint8
    assert rows.__array_interface__["data"][0] == out.unsafe_buffer_pointer()


def test_issue69_a_gymnax_wrapper_or_an_is_truncated_that_does_not_fit_is_an_input_error_naming_the_fix():
    """A gymnax wrapper (LogWrapper, …) forwards reset_env and step_env to its env, so its own reset and
    step would be skipped: refused, naming the fix. A subclass of gymnax's Environment whose state has
    no ``time`` inherits an is_truncated that cannot read it: refused before any round, naming the fix."""
    import gymnax
    from gymnax.environments.environment import Environment
    from gymnax.wrappers.purerl import LogWrapper

    with pytest.raises(rollway.InputError, match=r"LogWrapper, which wraps a gymnax env.*give rollway the env itself"):
        rollway.Rollout(lambda: LogWrapper(gymnax.make("CartPole-v1")[0]), "random", num_envs=2, host="inline")

    class Timeless(Environment):
        walk = walk_env()
        name = "Timeless-v0"
        default_params = {"limit": 12}

        def __getattr__(self, name):
            return getattr(self.walk, name)

        def observation_space(self, params):
            return self.walk.observation_space(params)

        def action_space(self, params):
            return self.walk.action_space(params)

        def reset_env(self, key, params):
            return self.walk.reset_env(key, params)

        def step_env(self, key, state, action, params):
            return self.walk.step_env(key, state, action, params)

    with pytest.raises(rollway.InputError, match=r"jax:Timeless-v0: its is_truncated .* override is_truncated in the env"):
        rollway.Rollout(Timeless, "random", num_envs=2, host="inline")
