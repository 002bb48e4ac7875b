"""The connection to a server: its state, the server and model panel, the first-run dialog."""
