"""`hlm-train`'s commands beside `train`: the command line (cli), prepare (prepare_command), download, preflight,
ensemble, evaluate (score_database) and the key registry's page (config_doc)."""
