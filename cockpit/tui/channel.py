"""The one way a view or screen gets the study's state.

A view (a tab's widget) or a screen that renders the study subclasses `SnapshotView`; the app calls its
`apply(snapshot)` with every new snapshot: the active tab's view, and the screen shown when it is one of
these (an isinstance check, not an attribute probe). A screen opened later gets the snapshot current then
in its constructor and draws it when mounted. Nothing here reaches back into the app: actions that leave
the cockpit are messages (cockpit.tui.files), the rest are the views' own messages.
"""

from __future__ import annotations

from cockpit.store.snapshot import StudySnapshot


class SnapshotView:
    """Mixed into a Textual widget or screen (after the Textual base) that renders snapshots."""

    def apply(self, snapshot: StudySnapshot) -> None:
        """Show `snapshot`; called on the UI thread with every new one while this view is shown."""
        raise NotImplementedError(f"{type(self).__name__} renders snapshots but has no apply()")
