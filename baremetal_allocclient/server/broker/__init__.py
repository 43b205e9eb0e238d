"""The allocation broker: the server in front of a real Ironic
(``--backend ironic``).  Ironic holds the nodes and decides every
reservation; the server keeps a mirror of the node facts selection reads,
selects as it always does, claims the chosen node with an Ironic
allocation of the same UUID, and passes every route it does not own
through to Ironic."""
