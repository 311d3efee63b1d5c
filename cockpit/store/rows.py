"""What every part of the store shares at the bottom: its error and a fully fetched result."""

from __future__ import annotations

from typing import Any


class StoreError(Exception):
    """The store file cannot be used (newer schema, corrupt, unknown study)."""


class StoreFull(StoreError):
    """The disk holding the store is full (SQLite: "database or disk is full"): the write was rolled back and
    the cockpit stops writing; everything committed before is kept."""


class Rows(list):
    """A fully fetched result (so no cursor outlives the lock), with the cursor's lastrowid."""

    lastrowid: int | None = None

    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list[Any]:
        return list(self)
