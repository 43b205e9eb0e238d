"""What both wings share below HTTP: who asks (:mod:`.principal`), what
they may see and do (:mod:`.policy`), the shape of identifiers
(:mod:`.identifiers`), changes as JSON patches (:mod:`.patching`) and
the errors services raise (:mod:`.errors`), which ``api/errors.py``
alone turns into HTTP answers.

Pure (standard library, os-traits and jsonpatch only): nothing here
imports the API layer, the database or a wing.
"""
