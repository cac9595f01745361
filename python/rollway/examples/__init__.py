"""Complete learners and tools built on rollway, shipped with the package so that every guide's
command runs from a pip install: ``python -m rollway.examples.NAME --help``. Each is one file
(they share CleanRL's network and PPO update through ``rollway.examples.ppo_cartpole``) and needs
torch; each is also run, shortened, by the tests. The list, with what each does, is on the docs'
Examples page."""
