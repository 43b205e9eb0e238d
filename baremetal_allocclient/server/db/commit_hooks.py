"""Something to do once the caller's transaction has committed.

What happened is reported (counted, logged for the audit) only once it
is committed: nothing a rollback takes back is announced.  SQLAlchemy's
``after_commit`` event, on the one session of a transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import event
from sqlalchemy.orm import Session


def on_commit(session: Session, action: Callable[[], None]) -> None:
    """Run ``action`` once ``session``'s transaction commits; never if it
    rolls back."""
    event.listen(session, "after_commit", lambda _session: action(),
                 once=True)
