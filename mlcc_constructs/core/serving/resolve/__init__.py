"""Stage 2, engine config: Tier-1/Tier-2 resolution, the LoRA rank fit, the CacheBackend fit."""
