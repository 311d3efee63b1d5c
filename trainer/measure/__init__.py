"""What a run measures of itself, beside the loop: the parts of T and the communication meter (timing), the
metrics lines (metrics), where it ran (provenance). DDP's bucket formulas, which the cockpit's prediction shares,
are runcontract.ddp_buckets."""
