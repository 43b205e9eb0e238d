"""HTTP handlers of the allocation extension: parse, check the version,
call the service, render."""
