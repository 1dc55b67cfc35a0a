"""specgate package."""
