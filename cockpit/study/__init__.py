"""The study file: spec.py reads a study TOML into a Study (its configuration matrix, the configuration label,
each run's config.json); spec_rules.py checks the file table by table from trainer.config_keys."""
