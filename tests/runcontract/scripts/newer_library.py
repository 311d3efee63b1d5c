"""A script written for a newer contract than the installed library offers."""

import runcontract

with runcontract.Run(requires=runcontract.CONTRACT_VERSION + 1) as run:
    run.step()
