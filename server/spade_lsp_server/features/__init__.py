"""One module per LSP feature, each with ``register(server)`` (called by ``server.create_server``)."""
