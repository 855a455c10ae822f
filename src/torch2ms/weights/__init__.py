"""Weight conversion: torch state dicts → MindSpore parameter dicts, driven by the KB."""
