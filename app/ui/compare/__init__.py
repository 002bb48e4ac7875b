"""The A/B compare window: two models on the same inputs."""
