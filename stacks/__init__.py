"""The app's stacks, composed by ``app.py`` (README, *CDK infrastructure*)."""
