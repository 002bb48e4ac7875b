"""The embedded local Triton server (no Qt here)."""
