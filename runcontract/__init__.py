"""runcontract: the run-directory contract (result.json with T and its five parts, metrics.jsonl, gpu.jsonl,
exit.json) written from any PyTorch training loop, so that the cockpit can study it.

Three ways in (docs/workloads.md): `Run` in a plain loop; `runcontract.hf.RunContractCallback` for a
Hugging Face `transformers` Trainer; `python -m runcontract.attach SCRIPT ARGS...` for an unmodified script.
Importing this package loads the standard library only (torch is imported by runcontract.hooks and
runcontract.hf alone, pynvml only if installed).
"""

from runcontract.contract import (
           BREAKDOWN_PARTS,
           CONTRACT_VERSION,
           EXIT_CHECKPOINTED,
           RUN_DIR_ENV,
           SCHEMA_VERSION,
)
from runcontract.files import ContractError
from runcontract.judge import judge
from runcontract.run import Run

__all__ = ["BREAKDOWN_PARTS", "CONTRACT_VERSION", "EXIT_CHECKPOINTED", "RUN_DIR_ENV", "SCHEMA_VERSION",
           "ContractError", "Run", "judge"]
