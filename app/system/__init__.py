"""Facts about this machine's processes and files, shared by every layer: /proc readers, names
that carry their owner, removal of what dead owners left behind, files written whole or not at
all (atomic_files). No Qt, no app imports."""
