"""The terminal cockpit (Textual). Import `cockpit.tui.app` only when a screen is about to be drawn."""
