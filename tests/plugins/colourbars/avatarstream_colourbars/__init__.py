"""A model family installed as its own package and registered by entry point (docs/families.md walks through it)."""
