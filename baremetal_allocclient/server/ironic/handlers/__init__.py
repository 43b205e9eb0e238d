"""HTTP handlers of the Ironic stand-in."""
