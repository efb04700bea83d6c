"""The release: what sdc publishes, verified against its own recomputation (verify), and audited as a whole."""
