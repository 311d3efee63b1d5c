"""What a run's files say, each module alone: explain.py (the overhead split per step-time part, straggler,
verdicts), quality.py (model quality from result.json's evaluation), series.py (the four figures' data),
labels.py (what a study's workers are called), traces.py (torch.profiler traces read without torch),
units.py (an efficiency as every view prints it)."""
