"""Waiting in line for capacity (the queue extension): the decisions
(:mod:`.waiting`, pure: deadlines, who is promised which node), the
line's reads in SQL (:mod:`.queries`) and the rounds that serve it
(:mod:`.rounds`)."""
