"""The preflight: the fewest short jobs that show a study's jobs will run, before node-hours are spent.

`jobs.py` picks the jobs (one per node count) and writes what each is told; `checks.py` turns what a job
found into verdict rows against what the study expects; `run.py` submits, waits and collects through any
Backend; `record.py` keeps each preflight in the study's store under the study file's digest, which
`cockpit open` and `cockpit run` ask before they submit; `table.py` prints it.
"""
