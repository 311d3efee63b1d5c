"""Built-in Slurm site profiles (TOML), read by cockpit.launch.slurm.sites."""
