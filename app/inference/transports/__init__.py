"""How requests travel: one channel to a server, the gRPC payload or system shared memory."""
