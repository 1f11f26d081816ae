// Generated from promptc/data/providers.json by runtime-js/gen_constants.py: do not edit.
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
// Per shape: the provider it goes to, what its API requires of the turns, how the pinned
// Python SDK writes the body (key order, json.dumps options; Gemini's REST layout).
export const SHAPE_INFO = Object.freeze({
  "anthropic": {
    "provider": "anthropic",
    "requires": "user_turn",
    "body": {
      "sdk": "anthropic==2.15.0",
      "serializer": {
        "ensure_ascii": false,
        "separators": [
          ",",
          ":"
        ],
        "allow_nan": false
      },
      "order": [
        "max_tokens",
        "messages",
        "model",
        "cache_control",
        "container",
        "diagnostics",
        "inference_geo",
        "metadata",
        "output_config",
        "service_tier",
        "speed",
        "stop_sequences",
        "stream",
        "system",
        "thinking",
        "tool_choice",
        "tools"
      ]
    }
  },
  "openai": {
    "provider": "openai",
    "requires": "message",
    "body": {
      "sdk": "openai==3.57.0",
      "serializer": {
        "ensure_ascii": false,
        "separators": [
          ",",
          ":"
        ],
        "allow_nan": false
      },
      "order": [
        "model",
        "stream",
        "service_tier",
        "messages",
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "metadata",
        "modalities",
        "moderation",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "stop",
        "store",
        "stream_options",
        "temperature",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options"
      ]
    }
  },
  "openai-responses": {
    "provider": "openai",
    "requires": "message",
    "body": {
      "sdk": "openai==3.57.0",
      "serializer": {
        "ensure_ascii": false,
        "separators": [
          ",",
          ":"
        ],
        "allow_nan": false
      },
      "order": [
        "model",
        "stream",
        "service_tier",
        "access_programs",
        "background",
        "background_options",
        "context_management",
        "conversation",
        "image",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "moderation",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "store",
        "stream_options",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user"
      ]
    }
  },
  "gemini": {
    "provider": "gemini",
    "requires": "user_turn",
    "body": {
      "sdk": "google-genai==3.6.1",
      "serializer": {
        "ensure_ascii": true,
        "separators": [
          ", ",
          ": "
        ],
        "allow_nan": true
      },
      "order": [
        "contents",
        "systemInstruction",
        "tools",
        "toolConfig",
        "generationConfig"
      ],
      "config": {
        "system_instruction": "systemInstruction",
        "tools": "tools",
        "tool_config": "toolConfig"
      },
      "generation": [
        [
          "temperature",
          "temperature"
        ],
        [
          "top_p",
          "topP"
        ],
        [
          "top_k",
          "topK"
        ],
        [
          "candidate_count",
          "candidateCount"
        ],
        [
          "max_output_tokens",
          "maxOutputTokens"
        ],
        [
          "stop_sequences",
          "stopSequences"
        ],
        [
          "presence_penalty",
          "presencePenalty"
        ],
        [
          "frequency_penalty",
          "frequencyPenalty"
        ],
        [
          "seed",
          "seed"
        ],
        [
          "response_mime_type",
          "responseMimeType"
        ],
        [
          "response_json_schema",
          "responseJsonSchema"
        ],
        [
          "thinking_config",
          "thinkingConfig"
        ]
      ],
      "fields": {
        "thinking_config": [
          [
            "include_thoughts",
            "include_thoughts"
          ],
          [
            "thinking_budget",
            "thinking_budget"
          ],
          [
            "thinking_level",
            "thinking_level"
          ]
        ],
        "tool_config": [
          [
            "retrieval_config",
            "retrievalConfig"
          ],
          [
            "function_calling_config",
            "functionCallingConfig"
          ],
          [
            "include_server_side_tool_invocations",
            "includeServerSideToolInvocations"
          ]
        ],
        "function_calling_config": [
          [
            "allowed_function_names",
            "allowedFunctionNames"
          ],
          [
            "mode",
            "mode"
          ],
          [
            "stream_function_call_arguments",
            "streamFunctionCallArguments"
          ]
        ]
      }
    }
  }
});
// The model-name prefixes of each provider (`claude-` → anthropic).
export const MODEL_PREFIXES = Object.freeze({
  "anthropic": [
    "claude-"
  ],
  "openai": [
    "gpt-",
    "chatgpt-",
    "codex-",
    "o1",
    "o3",
    "o4"
  ],
  "gemini": [
    "gemini-"
  ]
});
