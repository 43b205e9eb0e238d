"""When the I/O loop waits for a connection to take more of its answer.

A request thread sends its answer itself as it writes it (``serve``
sets waitress's ``send_bytes`` to 1), holding the connection's output
lock while it appends and sends.  waitress's I/O loop asks ``poll()``
to report a connection writable whenever output is queued for it, but
while a request is running its ``handle_write`` only *tries* that lock.
So while a request thread holds it (between appending and sending, or
waiting for the GIL in the middle of a send), ``poll()`` answers at
once, ``handle_write`` does nothing, and the loop goes round again,
taking the GIL each time from the threads that would end the wait.
Measured with 32 clients sending ``Prefer: wait`` creates: 40,000 such
rounds a second, the I/O thread using three quarters of a core, and
the server's CPU per allocation four times that at 8 clients.

:func:`writable` is waitress's test with that case taken out: it does
not ask for a connection whose output a running request's thread is
sending.  That thread sends what it can; what the socket did not take
is sent by the loop once the request ends (waitress wakes the loop
then), or at the loop's next round once the lock is free.  One case
still asks with the lock held: output over waitress's high watermark,
for which the request thread waits on the lock until the loop has sent
some.
"""

from __future__ import annotations

from typing import Any

from baremetal_allocclient.server.frontend import waitress_internals as w


def writable(channel: Any) -> bool:
    """Whether the I/O loop should wait for ``channel``'s socket to take
    more output (its ``writable`` in the loop's ``poll()``)."""
    if not w.stock_writable(channel):
        return False  # nothing queued, nothing to close
    if not w.request_running(channel) or w.closing(channel):
        return True  # only the loop sends it, or closes the connection
    if w.output_over_watermark(channel):
        return True  # the request thread waits for the loop to send
    lock = w.output_lock(channel)
    if not lock.acquire(blocking=False):
        return False  # a request thread is sending it
    lock.release()
    return True
