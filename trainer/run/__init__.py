"""One rank's run: the Trainer built (build), the datasets it trains on (sources), the loop (loop), a step timed
into the parts of T (step), torch.profiler's schedule (profiling), checkpoints (checkpoint), the result (result),
and the run as `hlm-train train` starts it (train)."""
