"""Prediction, analysis, what-if, advice and comparison; the computations return data and their wording is
apart (prediction_words.py, whatif_table.py, compare_table.py). Nothing here reads the store: the store and
store/recorded.py read these.

- prediction.py    the scaling model: T, speedup, node-hours and memory per rank from a baseline and links
- straggler.py     the wait for the slower rank a step of N workers adds to comm, from the baseline's per-step spread
- batch_fit.py     compute per step against the batch, over the baselines at several batch sizes
- rank_memory.py   memory per rank as each strategy shards the model states
- analysis.py      analyse(results): every number shown, each row's prediction and advice (AnalysisCache)
- plan.py          make_plan: each configuration's status, the node-hour estimate, the budget
- gpu_fit.py       the largest model that fits one GPU per strategy
- compare.py       two studies matched by their axes, B predicted from A
- whatif.py        the study file with keys changed, each configuration predicted from what it recorded
- key_effects.py   runs that differ in one swept key only, side by side in seconds (pinned memory, precision)
- advice/          what a key change does (effects.py), forecast() of any configuration (forecasting.py),
                   the advice per loss (options.py)
"""
