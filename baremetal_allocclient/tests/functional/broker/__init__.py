"""The reference server in front of a real Ironic (``--backend ironic``)."""
