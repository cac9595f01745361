"""Issue 58: the Python signatures are checked against what they front, so a setting is named
once: ``rollway.run``'s keywords against the engine's run settings (``RunOptions``, exported as
``_rollway.RUN_SETTINGS``), ``rollway.Rollout``'s against the engine's rollout request
(``RolloutRequest``, ``_rollway.ROLLOUT_SETTINGS``), and ``rollway.Loader``'s against the
extension's loader."""

import inspect
import json

import rollway
import rollway.ray
from rollway import _rollway

# run()'s own keywords, which are not run settings: where it records and how it is called.
RUN_FRONT = {"out", "resume", "append", "record", "progress", "config", "host", "more"}
# The Loader's own: epochs and polling are Python's; select= carries the handle's filters.
LOADER_FRONT = {"self", "epochs", "select", "poll"}
SELECTED = {"labels", "min_return", "max_return", "min_length", "max_length", "min_policy_version"}


def test_issue58_every_run_keyword_is_a_run_setting_and_every_setting_is_named_in_run():
    settings = set(_rollway.RUN_SETTINGS)
    assert {"env", "agent", "episodes", "commit_every", "max_buffer_steps"} <= settings, settings
    keywords = set(inspect.signature(rollway.run).parameters) - RUN_FRONT
    assert keywords <= settings, f"run() keywords the engine does not know: {keywords - settings}"
    # The rest pass through **more: each is named in run()'s docs, so none is hidden.
    doc = rollway.run.__doc__ or ""
    undocumented = {k for k in settings - keywords if f"``{k}``" not in doc}
    assert not undocumented, f"run settings rollway.run neither takes by name nor documents: {undocumented}"


def test_issue58_the_loader_passes_the_extensions_keywords_with_the_same_defaults():
    ours = inspect.signature(rollway.Loader.__init__).parameters
    theirs = inspect.signature(_rollway.LoaderHandle).parameters
    assert set(ours) - LOADER_FRONT == set(theirs) - SELECTED, (set(ours) ^ set(theirs))
    for name in set(theirs) - SELECTED:
        assert ours[name].default == theirs[name].default, f"{name}: {ours[name].default!r} vs {theirs[name].default!r}"


# Rollout()'s own keywords, which are not the engine's: the learner-side log and the old names.
ROLLOUT_FRONT = {"self", "log_dir", "progress", "old_names"}


def test_issue58_the_rollouts_keywords_are_the_engines_settings_with_the_same_defaults():
    settings = json.loads(_rollway.ROLLOUT_SETTINGS)
    params = inspect.signature(rollway.Rollout.__init__).parameters
    assert set(params) - ROLLOUT_FRONT == set(settings), set(params) ^ set(settings)
    for name, default in settings.items():
        ours = params[name].default
        if ours is inspect.Parameter.empty or ours is None:
            # Required, or left to the engine: its default is "none" (None, an empty table or list).
            assert default in (None, {}, []) or name == "env", f"{name}: the engine defaults to {default!r}"
        else:
            assert ours == default, f"{name}: Rollout says {ours!r}, the engine {default!r}"
    # The Ray rollout passes the same settings to its actors: its own are only the cluster's.
    ray_params = set(inspect.signature(rollway.ray.Rollout.__init__).parameters)
    assert {"agent", "num_envs", "steps_per_fragment", "seed", "max_policy_lag", "out", "resume", "version"} <= ray_params
