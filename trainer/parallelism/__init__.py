"""Data parallelism: the process group (distributed) and one code path per strategy, ddp, zero1, fsdp,
fsdp_noreshard (parallel; docs/strategies.md)."""
