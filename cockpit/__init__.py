"""HLM scaling cockpit: the laptop side. Importing it must stay cheap and must never import torch."""

__version__ = "0.1.0"
