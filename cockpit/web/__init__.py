"""The cockpit in a browser: textual-serve runs `cockpit open ...` per browser tab, behind a secret token."""
