"""The Slurm backend, one package: the client (sbatch, squeue, sacct, scontrol, sacctmgr over the one SSH
connection, with defensive parsers), the Backend over it, batch-script rendering from the templates in
`sbatch_templates`, site profiles, and the quoting rules every value that reaches a script goes through."""
