"""The HTTP front end of ``serve``: waitress with deadlines.

waitress's I/O loop reads each request whole (line, headers and body)
before a request thread sees it, so a slow client holds a file
descriptor, never a thread; :mod:`.deadline` closes a connection whose
request has not arrived in full within ``--request-timeout``, or whose
client has not taken its answer and begun its next request within
``--idle-timeout``, :mod:`.tls` speaks TLS inside the same loop,
:mod:`.sending` keeps the loop from going round while a request thread
sends, :mod:`.paths` keeps an encoded slash in ``PATH_INFO`` encoded,
:mod:`.options` holds the ``serve`` options and :mod:`.fenced` runs and
stops it.  These are built on waitress's undocumented internals, which
only :mod:`.waitress_internals` touches and checks; on a waitress that
lacks one, :mod:`.server` serves with stock waitress (:mod:`.stock`)
instead.  See doc/source/reference/server.rst ("The HTTP front end").
"""
