"""Stage 1, input: the deployment spec, spec files, render context, the app's deployment list."""
