"""The watch extension: a resumable stream of committed allocation
changes (doc/source/reference/watch.rst).

``log.py`` hands out cursors and reads the change log (SQL);
``events.py`` turns a log row into an event and decides who sees it
(pure); ``hub.py`` holds the watchers' sockets and feeds them from one
poller of the log per process.
"""
