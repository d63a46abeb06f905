"""HyperPod rollouts: the live cluster's capacity (:mod:`.cluster_state`) and the decisions of
``mlcc rollout`` (:mod:`.rules`): is there a rollout, can its surge pod schedule, which node to
add and remove."""
