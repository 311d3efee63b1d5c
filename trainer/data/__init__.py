"""ECG data for the Heart Language Model: reading, tokenizing, preparing and windowing.

Importing this package stays light (no torch, no wfdb): the cockpit may import `DataError`
and the split helpers. `trainer.data.dataset` is the torch-facing part.
"""

from trainer.data.errors import DataError

__all__ = ["DataError"]
