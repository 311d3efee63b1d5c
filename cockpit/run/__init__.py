"""The study runner's parts, each with one job; `cockpit.run.runner.StudyRunner` drives them tick by tick.

- scope.py         what every part works on: the study, its backend, its store key, its run directories
- outcome.py       how a job ended: result.json and exit.json parsed, the reason words, requeue-aware state
- job_states.py    the store's job states kept true to the cluster: each poll, departed jobs, reconcile
- submission.py    what is submitted now: the concurrency cap, foundation and baseline holds, the budget
- live_files.py    the running jobs' metrics, GPU samples and logs followed into the store
- preflight_gate.py  no submission before the study file's preflight has passed
"""
