"""Stage 3, prepare once: names, the container description, PreparedDeployment."""
