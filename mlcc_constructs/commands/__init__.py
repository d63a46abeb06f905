"""``mlcc`` command groups; each module exposes ``register(subparsers)``."""
