"""The pure core: every rule of the library as plain functions over dataclasses and dicts.

Standard library, jsonschema and PyYAML only: no jsii, no network, no file writes (it reads
the data it ships). Engine manifests, targets, resolution, the render pipeline, LoRA rank fit
and memory cap, the S3 layout, CacheBackend admission and injection live here; the cdk8s
(``k8s``), CDK (``aws``), I/O (``ops``) and command (``cli``) layers only call it.
"""
