"""The connection to a server, Qt-free: the embedded server's lifecycle and restart budget, the
state of the connection, reconnecting after an outage (the viewer's ConnectionController is a
thin Qt adapter over `ConnectionManager`; the command line uses `LocalServer`)."""
