"""I/O for the ``mlcc`` command: S3 (boto3 clients passed in), HTTP to serving pods, kubectl.

The rules live in :mod:`mlcc_constructs.core` and stay pure; a module here gathers the facts
a rule needs (objects, listings, pod answers, live cluster state), calls the core, and performs
what it decides. Layering: this package imports the core and never ``aws_cdk``, ``cdk8s``,
``constructs``, ``jsii``, :mod:`mlcc_constructs.k8s` or the CLI; the CLI imports it.
"""
