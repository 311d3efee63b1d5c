"""`hlm-train`'s commands beside `train`: the command line (cli), prepare (prepare_command), download, preflight,
ensemble and evaluate (score_database)."""
