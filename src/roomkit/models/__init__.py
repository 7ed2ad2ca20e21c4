"""Plain data shared by every layer: enums, pending requests, events."""
