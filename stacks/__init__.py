"""The app's stacks, composed by ``app.py`` (docs/guides/cdk-app.md)."""
