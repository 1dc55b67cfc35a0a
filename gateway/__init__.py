"""The HTTP surface: ASGI app, generation handler, admin API, auth, OpenAPI, CLI."""
