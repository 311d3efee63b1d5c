"""The study file: spec.py reads a study TOML into a Study (its configuration matrix, the configuration label,
each run's config.json); spec_rules.py checks the file table by table; tables.py declares the study's own tables
([study], [cluster], [site]) and key_doc.py writes docs/study-keys.md from every table."""
