"""The client the language server and the CLI use to talk to the workspace daemon."""
