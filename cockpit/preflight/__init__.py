"""The preflight: the fewest short jobs that show a study's jobs will run, before node-hours are spent.

`jobs.py` picks the jobs (one per node count) and writes what each is told; `checks.py` turns what a job
found into verdict rows against what the study expects; `table.py` prints it. These are the description of a
preflight, a layer below the backends (which submit its jobs) and the store (which keeps its reports); running
one through a Backend is orchestration (`cockpit/run/preflight.py`), and keeping each report under the study
file's digest, which `cockpit open` and `cockpit run` ask before they submit, is the store's
(`cockpit/store/preflights.py`).
"""
