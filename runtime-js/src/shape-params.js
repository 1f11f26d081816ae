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
  "bedrock": {
    "max_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "stop": "stopSequences"
  },
  "anthropic-vertex": {
    "max_tokens": "max_tokens",
    "stop": "stop_sequences",
    "metadata": "metadata",
    "service_tier": "service_tier",
    "thinking": "thinking",
    "tool_choice": "tool_choice",
    "inference_geo": "inference_geo",
    "speed": "speed"
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
// Python SDK writes the body (key order, json.dumps options; Gemini's REST layout; the keys
// the SDK moves into the URL and the ones it adds).
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
  "bedrock": {
    "provider": "bedrock",
    "requires": "user_first",
    "body": {
      "sdk": "boto3==1.43.11",
      "serializer": {
        "ensure_ascii": true,
        "separators": [
          ", ",
          ": "
        ],
        "allow_nan": true
      },
      "order": [
        "messages",
        "system",
        "inferenceConfig",
        "toolConfig",
        "guardrailConfig",
        "additionalModelRequestFields",
        "promptVariables",
        "additionalModelResponseFieldPaths",
        "requestMetadata",
        "performanceConfig",
        "serviceTier",
        "outputConfig"
      ],
      "uri": [
        "modelId"
      ],
      "inference": [
        "maxTokens",
        "temperature",
        "topP",
        "stopSequences"
      ],
      "note": "botocore's rest-json serializer: the members it is given, in that order, with json.dumps defaults (ASCII escapes, `, ` and `: `); `modelId` goes in the URI (POST /model/{modelId}/converse), and the body is what SigV4 signs."
    }
  },
  "anthropic-vertex": {
    "provider": "anthropic-vertex",
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
      ],
      "uri": [
        "model"
      ],
      "append": {
        "anthropic_version": "2026-10-21"
      },
      "note": "The Messages body without `model`, which goes in the URL (…/publishers/anthropic/models/{model}:rawPredict), and with the SDK's `anthropic_version` last (anthropic/lib/vertex/_client.py `_prepare_options`)."
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
  ],
  "bedrock": [
    "anthropic.claude-",
    "us.anthropic.claude-",
    "eu.anthropic.claude-",
    "apac.anthropic.claude-",
    "jp.anthropic.claude-",
    "au.anthropic.claude-",
    "global.anthropic.claude-"
  ],
  "anthropic-vertex": []
});
// The form of a provider's model ids, matched whole before the prefixes
// (`claude-sonnet-4-5@20250929` → anthropic-vertex).
export const MODEL_PATTERNS = Object.freeze({"anthropic-vertex": /^claude-[a-z0-9.-]+@[0-9]{8}$/});
// Per provider, the per-model facts the shapes read for the model a request goes to (the
// longest model-name prefix in `by_model` wins, else `value`), the platform whose models it
// serves under the same names, and the cross-Region prefixes dropped before a lookup.
export const PROVIDER_FACTS = Object.freeze({
  "anthropic": {
    "same_as": null,
    "inference_profiles": [],
    "cache_ttls": {
      "value": [
        "5m",
        "1h"
      ],
      "by_model": {}
    },
    "explicit_breakpoints": {
      "value": null,
      "by_model": {}
    },
    "cache_retention": {
      "value": null,
      "by_model": {}
    }
  },
  "openai": {
    "same_as": null,
    "inference_profiles": [],
    "cache_ttls": {
      "value": [],
      "by_model": {
        "gpt-5.6": [
          "30m",
          "12h"
        ],
        "gpt-6": [
          "30m",
          "12h"
        ]
      }
    },
    "explicit_breakpoints": {
      "value": false,
      "by_model": {
        "gpt-5.6": true,
        "gpt-6": true
      }
    },
    "cache_retention": {
      "value": null,
      "by_model": {
        "gpt-5.5": "24h",
        "gpt-5.6": "24h",
        "gpt-6": "24h"
      }
    }
  },
  "gemini": {
    "same_as": null,
    "inference_profiles": [],
    "cache_ttls": {
      "value": [],
      "by_model": {}
    },
    "explicit_breakpoints": {
      "value": null,
      "by_model": {}
    },
    "cache_retention": {
      "value": null,
      "by_model": {}
    }
  },
  "bedrock": {
    "same_as": null,
    "inference_profiles": [
      "us.",
      "eu.",
      "apac.",
      "jp.",
      "au.",
      "global."
    ],
    "cache_ttls": {
      "value": [
        "5m"
      ],
      "by_model": {
        "anthropic.claude-opus-5": [
          "5m",
          "1h"
        ],
        "anthropic.claude-fable-5-1": [
          "5m",
          "1h"
        ],
        "anthropic.claude-opus-4-8": [
          "5m",
          "1h"
        ],
        "anthropic.claude-opus-4-7": [
          "5m",
          "1h"
        ],
        "anthropic.claude-opus-4-6": [
          "5m"
        ],
        "anthropic.claude-opus-4-5": [
          "5m",
          "1h"
        ],
        "anthropic.claude-sonnet-4-6": [
          "5m"
        ],
        "anthropic.claude-sonnet-4-5": [
          "5m",
          "1h"
        ],
        "anthropic.claude-haiku-4-5": [
          "5m",
          "1h"
        ],
        "anthropic.claude-opus-4-1": [
          "5m"
        ],
        "anthropic.claude-opus-4-20250514": [
          "5m"
        ],
        "anthropic.claude-3-7-sonnet": [
          "5m"
        ],
        "anthropic.claude-3-5-sonnet-20241022-v2": [
          "5m"
        ]
      }
    },
    "explicit_breakpoints": {
      "value": null,
      "by_model": {}
    },
    "cache_retention": {
      "value": null,
      "by_model": {}
    }
  },
  "anthropic-vertex": {
    "same_as": "anthropic",
    "inference_profiles": [],
    "cache_ttls": {
      "value": [
        "5m",
        "1h"
      ],
      "by_model": {}
    },
    "explicit_breakpoints": {
      "value": null,
      "by_model": {}
    },
    "cache_retention": {
      "value": null,
      "by_model": {}
    }
  }
});
