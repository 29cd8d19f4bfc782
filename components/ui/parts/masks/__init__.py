"""The masks lesson's parts, one tab each: masks (step by step, and the leakage proof on
the visitor's sentence), then the labs scale (why ÷√d_k), kv (the KV cache) and cost."""
