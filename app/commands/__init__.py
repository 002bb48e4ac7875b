"""One module per command-line sub-command."""
