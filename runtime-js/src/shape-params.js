// Generated from promptc/data/providers.json by tests/js_vectors.py: do not edit.
// promptc's parameter names → the names each shape's SDK call takes.
export const SHAPE_PARAMS = Object.freeze({
  "anthropic": {
    "max_tokens": "max_tokens",
    "stop": "stop_sequences",
    "metadata": "metadata",
    "service_tier": "service_tier",
    "thinking": "thinking",
    "tool_choice": "tool_choice",
    "inference_geo": "inference_geo",
    "speed": "speed"
  },
  "openai": {
    "max_tokens": "max_completion_tokens",
    "stop": "stop",
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "reasoning_effort": "reasoning_effort",
    "verbosity": "verbosity",
    "service_tier": "service_tier",
    "tool_choice": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
    "logprobs": "logprobs",
    "top_logprobs": "top_logprobs",
    "n": "n",
    "logit_bias": "logit_bias",
    "metadata": "metadata",
    "store": "store",
    "safety_identifier": "safety_identifier",
    "prompt_cache_retention": "prompt_cache_retention"
  },
  "openai-responses": {
    "max_tokens": "max_output_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "reasoning": "reasoning",
    "service_tier": "service_tier",
    "tool_choice": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
    "max_tool_calls": "max_tool_calls",
    "top_logprobs": "top_logprobs",
    "truncation": "truncation",
    "metadata": "metadata",
    "store": "store",
    "safety_identifier": "safety_identifier",
    "prompt_cache_retention": "prompt_cache_retention"
  },
  "gemini": {
    "max_tokens": "max_output_tokens",
    "stop": "stop_sequences",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "seed": "seed",
    "candidate_count": "candidate_count",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "thinking_config": "thinking_config",
    "tool_config": "tool_config"
  }
});
