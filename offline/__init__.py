"""Offline tools the server never runs: simulator, load generator (`specgate bench`), plots, progress bars."""
