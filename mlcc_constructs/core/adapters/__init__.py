"""LoRA adapters and full fine-tunes: where they live and what may be done with them.

The canonical S3 layout (:mod:`.s3_layout`, the only code composing those paths), adapter and
model records (:mod:`.record`, :mod:`.model_record`), rank fit and memory cap (:mod:`.lora_rank`,
:mod:`.lora`), sources (:mod:`.hf_source`), delivery to a deployment (:mod:`.deployment`), and
the decisions of ``mlcc adapter``: :mod:`.plan`, :mod:`.inventory`, :mod:`.clean`.
"""
