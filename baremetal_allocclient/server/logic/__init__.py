"""Pure decisions: selection, node states, release rules."""
