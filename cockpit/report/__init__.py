"""Headless reports of a study: Markdown, CSV, a self-contained HTML page and PNG figures."""
