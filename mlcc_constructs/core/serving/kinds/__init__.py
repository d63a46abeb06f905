"""Stage 4, objects: the Kubernetes kinds the library renders."""
