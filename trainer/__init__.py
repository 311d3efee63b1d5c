"""The cluster side: tokenize ECG, train the Heart Language Model under DDP, time every second of it.

This package's __init__ must never import torch: the cockpit's HLM workload package imports its key tables on
a laptop.
"""
