"""Generic support every domain uses, and nothing domain-specific.

:mod:`.errors` (problems with JSON pointers, raised together), :mod:`.documents` (strict JSON and
YAML readers), :mod:`.schema_check` and :mod:`.schema_verdict` (JSON Schema checks),
:mod:`.yaml_emit` and :mod:`.yaml_output` (byte-stable YAML), :mod:`.typecheck` (runtime type
checks of frozen props), :mod:`.quantity` (Kubernetes quantities), :mod:`.json_types`,
:mod:`.migration` (the error a call in an earlier release's form gets).
"""
