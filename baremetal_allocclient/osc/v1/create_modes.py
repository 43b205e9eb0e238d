"""How ``create`` makes its allocations: one small function per mode.

The modes (chosen by :func:`choose`; :func:`make_group` is the fourth):

- :func:`make`: create the allocations and return (no ``--wait``);
- :func:`make_and_wait`: create them and wait until none is
  ``allocating`` (``--wait``, also ``--wait-for-capacity`` on a server that
  keeps a line);
- :func:`retry_for_capacity`: ``--wait --wait-for-capacity`` against a
  server without the queue extension: create, and while no node is free
  delete and create again with backoff (one allocation);
- :func:`make_group`: ``--all-or-nothing`` / ``--group``: N active
  allocations or none.

:func:`reserve` runs one of the first three and turns an interruption or a
failure into what the command reports: records of what exists on stdout,
what is left (and how to release it) on stderr, exit 130/143 or 1.
:class:`~baremetal_allocclient.osc.v1.create.CreateAllocation` parses and
checks the command line and hands over to these functions.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn, TextIO

from baremetal_allocclient.osc.v1 import base, group_options, request_options

if TYPE_CHECKING:
    from baremetal_allocclient import exceptions
    from baremetal_allocclient.osc import progress as progress_module
    from baremetal_allocclient.v1 import Allocation, Client
    from baremetal_allocclient.v1 import budget as budget_module
    from baremetal_allocclient.v1 import reservation as reservation_module

    Mode = Callable[[reservation_module.Reservation, int], None]


@dataclasses.dataclass(frozen=True)
class Context:
    """What the modes need of the ``create`` command running them."""

    client: Client
    parser: argparse.ArgumentParser
    stderr: TextIO
    #: Whether the output is a list (``--count`` given), not one record.
    many: bool
    #: The command line that deletes these allocations.
    delete_hint: Callable[[Sequence[str]], str]
    #: Print records of these allocations on stdout.
    show: Callable[[Sequence[Allocation]], None]


def make(run: reservation_module.Reservation, count: int) -> None:
    """Create ``count`` allocations; do not wait for them."""
    run.create(count, hold=False)


def make_and_wait(run: reservation_module.Reservation, count: int) -> None:
    """Create ``count`` allocations and wait until they settle."""
    run.create(count, hold=True)
    run.wait()


def retry_for_capacity(
    run: reservation_module.Reservation, count: int
) -> None:
    """Create one allocation again and again until a node is free."""
    run.settle_one(retry_capacity=True)


def choose(waits: bool, retry_capacity: bool) -> Mode:
    """The mode of a ``create`` that is not a group (pure)."""
    if retry_capacity:
        return retry_for_capacity
    return make_and_wait if waits else make


def reserve(
    ctx: Context, deadline: budget_module.Deadline,
    parsed_args: argparse.Namespace,
) -> list[Allocation]:
    """Run the mode the options ask for; return what was made."""
    from baremetal_allocclient.osc import progress
    from baremetal_allocclient.v1 import interrupts, reservation

    errors = base.exceptions_module()
    waits = parsed_args.wait_timeout is not None
    capacity = parsed_args.wait_for_capacity
    count = parsed_args.count or 1
    in_line = capacity and server_line(ctx, count)
    reporter = progress.for_stream(ctx.stderr) if waits else None
    request = request_options.request_from_args(ctx.parser, parsed_args)
    run = reservation.Reservation(
        ctx.client, dataclasses.replace(request, queue=in_line), deadline,
        reporter,
    )
    mode = choose(waits, retry_capacity=capacity and not in_line)
    with interrupts.sigterm_raises():
        try:
            _run(mode, run, count, reporter)
        except (KeyboardInterrupt, errors.Terminated) as exc:
            after_interrupt(ctx, run, parsed_args, exc)
        except (errors.ClientError, base.CommandFailed) as exc:
            after_failure(ctx, run, parsed_args, exc)
    made: list[Allocation] = run.made()
    return made


def _run(
    mode: Mode,
    run: reservation_module.Reservation,
    count: int,
    reporter: progress_module.TtyProgress | None,
) -> None:
    if reporter is not None:
        reporter.start(count)
    try:
        mode(run, count)
    finally:
        if reporter is not None:
            reporter.close()


def server_line(ctx: Context, count: int) -> bool:
    """Whether the server keeps a line (its queue extension); without
    one, say that retries are not fair, and refuse --count."""
    if ctx.client.supports_queue():
        return True
    if count > 1:
        raise base.CommandFailed(
            "--wait-for-capacity with --count needs a server that "
            "offers waiting in line (the queue extension); this one "
            "does not")
    from baremetal_allocclient.v1 import queueing

    ctx.stderr.write(queueing.UNFAIR + "\n")
    return False


def make_group(
    ctx: Context, parsed_args: argparse.Namespace
) -> list[Allocation]:
    """``--all-or-nothing`` / ``--group``: N active or none."""
    from baremetal_allocclient.v1 import interrupts

    errors = base.exceptions_module()
    group_request = dataclasses.replace(
        request_options.request_from_args(ctx.parser, parsed_args),
        name=parsed_args.group)
    try:
        with interrupts.sigterm_raises():
            made = ctx.client.allocate_group(
                parsed_args.count or 1, group_request,
                timeout=parsed_args.wait_timeout or None,
                spread=group_options.spread_of(parsed_args))
    except errors.GroupFailed as exc:
        raise base.CommandFailed(str(exc)) from exc
    except (KeyboardInterrupt, errors.Terminated) as exc:
        ctx.stderr.write(group_options.interrupted_message(
            parsed_args.group, getattr(exc, "group_left", ())))
        raise SystemExit(interrupts.exit_status(exc)) from None
    return made


def after_interrupt(
    ctx: Context,
    run: reservation_module.Reservation,
    parsed_args: argparse.Namespace,
    exc: BaseException,
) -> NoReturn:
    """Ctrl-C or SIGTERM: delete (--delete-on-failure) or report the
    UUIDs, then exit 130 or 143."""
    from baremetal_allocclient.v1 import interrupts

    if parsed_args.delete_on_failure:
        left = release(ctx, run, interrupted=True)
    else:
        left = list(run.attempted)
    if left:
        ctx.stderr.write(left_line(ctx, left, "Interrupted") + "\n")
    raise SystemExit(interrupts.exit_status(exc)) from None


def after_failure(
    ctx: Context,
    run: reservation_module.Reservation,
    parsed_args: argparse.Namespace,
    exc: Exception,
) -> NoReturn:
    """Print what exists (records on stdout), say what failed."""
    message = failure_message(exc)
    unconfirmed = run.unconfirmed()
    if parsed_args.delete_on_failure:
        left = release(ctx, run, interrupted=False)
        made = [a for a in run.made() if a.uuid in left]
    else:
        left = list(run.attempted)
        made = run.made()
    if made and (ctx.many or len(made) == 1):
        ctx.show(made)
    for uuid in unconfirmed:
        if uuid in left:
            message += (f"\nAllocation {uuid} may exist: its create got "
                        "no answer in time")
    if left:
        message += "\n" + left_line(ctx, left, "Failed")
    raise base.CommandFailed(message) from exc


def release(
    ctx: Context, run: reservation_module.Reservation, *, interrupted: bool
) -> list[str]:
    """Delete what the run made; return the UUIDs still left."""
    report = run.release(interrupted=interrupted)
    for uuid in report.deleted:
        ctx.stderr.write(f"Deleted allocation {uuid}\n")
    for uuid, reason in report.failed:
        ctx.stderr.write(
            f"Could not delete allocation {uuid}: {reason}\n"
        )
    return [uuid for uuid, _ in report.failed]


def left_line(ctx: Context, uuids: Sequence[str], why: str) -> str:
    """``Interrupted; allocations left: U (release with: ...)``."""
    return (
        f"{why}; allocations left: {' '.join(uuids)} (release "
        f"with: {ctx.delete_hint(uuids)})"
    )


def failure_message(exc: Exception) -> str:
    """One line per failed allocation, or the error's own message."""
    from baremetal_allocclient import exceptions

    if isinstance(exc, exceptions.AllocationFailed):
        return failure_report(exc.results or (exc.allocation,), exc)
    return str(exc)


def failure_report(
    final: Sequence[Allocation], exc: exceptions.AllocationFailed
) -> str:
    """One line per failed allocation, with the server's last_error."""
    failed = [a for a in final if a.state == "error"] or [exc.allocation]
    lines = [
        f"Allocation {a.ident} failed: {a.last_error or 'no reason given'}"
        for a in failed
    ]
    return "\n".join(lines)
