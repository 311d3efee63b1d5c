"""How well a model does: evaluation (evaluate), the class scores (scores: pure Python, shared with the
cockpit), the calibrated decision (calibration) and validation during training (validation). No torch at
import: the cockpit imports scores."""
