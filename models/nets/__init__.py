"""Neural networks, tokenizers and model loading: the forward passes."""
