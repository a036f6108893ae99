"""How start-up recovery tells a dead owner from a live one (careerwise.store.recovery.owner_is_dead):
the rules of the module's docstring, one by one."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from careerwise.store.recovery import OwnerRow, ProcessIdentity, owner_is_dead, start_token

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
LEASE = 60.0
HERE = ProcessIdentity(
    id="me", host="this-host|pid:[1]", pid=os.getpid(), start_token=start_token(os.getpid())
)


def owner(
    *,
    pid: int = os.getpid(),
    token: str | None = None,
    host: str = HERE.host,
    heartbeat_at: datetime = NOW,
    stopped_at: datetime | None = None,
) -> OwnerRow:
    return OwnerRow(host=host, pid=pid, start_token=token, heartbeat_at=heartbeat_at, stopped_at=stopped_at)


def exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def dead(row: OwnerRow | None) -> bool:
    return owner_is_dead(row, here=HERE, now=NOW, lease=LEASE)


def test_an_owner_with_no_row_or_marked_stopped_is_dead() -> None:
    assert dead(None)
    assert dead(owner(token=HERE.start_token, stopped_at=NOW))


@pytest.mark.skipif(HERE.start_token is None, reason="start tokens are read from /proc (Linux)")
def test_on_this_host_a_running_pid_with_its_own_start_token_is_alive_however_old_its_heartbeat() -> None:
    assert not dead(owner(token=HERE.start_token, heartbeat_at=NOW - timedelta(days=1)))


def test_on_this_host_a_pid_that_exited_is_dead_however_fresh_its_heartbeat() -> None:
    assert dead(owner(pid=exited_pid(), token="boot:1"))


@pytest.mark.skipif(HERE.start_token is None, reason="start tokens are read from /proc (Linux)")
def test_on_this_host_a_reused_pid_is_dead() -> None:
    """The pid runs, but another process than the one that registered (its start time differs)."""
    assert dead(owner(token="another-boot:12345"))


def test_on_another_host_only_the_heartbeat_tells() -> None:
    gone = exited_pid()  # not looked at: a pid of another host means nothing here
    beating = owner(host="other-host|pid:[1]", pid=gone, heartbeat_at=NOW - timedelta(seconds=LEASE - 1))
    silent = owner(host="other-host|pid:[1]", pid=gone, heartbeat_at=NOW - timedelta(seconds=LEASE + 1))
    assert not dead(beating)
    assert dead(silent)
