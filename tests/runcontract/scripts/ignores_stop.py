"""The explicit way in, but a loop that never looks at run.should_stop: a stop signal does not end it."""

import time

import runcontract

with runcontract.Run() as run:
    step = 0
    while True:
        with run.part("compute"):
            time.sleep(0.01)
        run.step()
        step += 1
        if step % 50 == 0:
            print(f"step {step}", flush=True)
