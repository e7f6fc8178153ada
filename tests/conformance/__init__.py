"""pyburn's conformance suite: every tensor op on every available device."""
