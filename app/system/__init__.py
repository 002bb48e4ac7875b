"""Facts about this machine's processes, shared by every layer: /proc readers, names that
carry their owner, removal of what dead owners left behind. No Qt, no app imports."""
