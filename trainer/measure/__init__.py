"""What a run measures of itself, beside the loop: the parts of T and the communication meter (timing), the
metrics lines (metrics), where it ran (provenance), DDP's buckets (ddp_buckets: pure Python, shared with the
cockpit's prediction). No torch at import: the cockpit imports ddp_buckets."""
