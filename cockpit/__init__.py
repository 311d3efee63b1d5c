"""HLM scaling cockpit: the laptop side. Importing it must stay cheap and must never import torch.

Its version is the installed distribution's (runcontract.commands.installed_version, `cockpit --version`)."""
