"""What a server says about itself: its models, health, version and statistics."""
