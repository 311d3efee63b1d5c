"""Built-in Slurm site profiles (TOML), read by cockpit.study.sites."""
