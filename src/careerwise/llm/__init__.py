"""The LLM layer: provider-neutral types, the OpenAI-compatible client, the local model, the stream helpers."""
