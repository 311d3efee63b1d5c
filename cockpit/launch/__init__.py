"""How a configuration becomes a running job: batch scripts for Slurm sites and the local executor."""
