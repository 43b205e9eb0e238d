"""Background work: allocation workers and fake hardware."""
