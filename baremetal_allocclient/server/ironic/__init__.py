"""The Ironic stand-in: nodes, ports, VIFs, vmedia, boot mode, fake
hardware, inventory."""
