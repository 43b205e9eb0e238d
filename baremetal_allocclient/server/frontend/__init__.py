"""The HTTP front end of ``serve``: waitress with a receive deadline.

waitress's I/O loop reads each request whole (line, headers and body)
before a request thread sees it, so a slow client holds a file
descriptor, never a thread; :mod:`.deadline` closes a connection whose
request has not arrived in full within ``--request-timeout``,
:mod:`.tls` speaks TLS inside the same loop, :mod:`.sending` keeps
the loop from going round while a request thread sends, :mod:`.paths`
keeps an encoded slash in ``PATH_INFO`` encoded, :mod:`.options` holds
the ``serve`` options and :mod:`.server` assembles, runs and stops it.
See doc/source/server.rst ("The HTTP front end").
"""
