"""spade-lsp's language server (LSP glue only) and its daemon process."""
