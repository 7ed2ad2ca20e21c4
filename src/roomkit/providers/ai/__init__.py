"""AI model providers: the interface, a scripted mock, and vendor SDK adapters."""
