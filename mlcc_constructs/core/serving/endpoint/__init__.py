"""A deployment's HTTP endpoint, as a client sees it (``mlcc endpoint check``).

:mod:`.address`: the base URL of a live deployment, from its Ingress (eks) or from its
``InferenceEndpointConfig`` and the Ingress the HyperPod inference operator made for it.
:mod:`.answers`: what the OpenAI-compatible API must answer (the model list, the server-sent
events of a streaming chat completion) and the check's JSON report. Pure: the calls are
``mlcc_constructs.ops.endpoint``'s.
"""
