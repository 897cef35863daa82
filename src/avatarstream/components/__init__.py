"""Parts that several model families share, kept here so that no family imports another's package."""
