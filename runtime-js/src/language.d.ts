// Generated from promptc.facts.language by runtime-js/gen_constants.py: do not edit.

export type Shape = "plain" | "anthropic" | "openai" | "openai-responses" | "gemini" | "bedrock" | "anthropic-vertex";
export declare const JOINER: "\n\n";
export declare const SHAPES: readonly Shape[];
export declare const SYSTEM_ROLES: readonly ("system" | "developer")[];
export declare const PLACEHOLDER_PATH: RegExp;
export declare const UNSAFE_PREFIX: "_";
export declare const UNSAFE_NAMES: readonly string[];
export declare const TEMPLATE_ESCAPES: readonly ("${" | "{{" | "{#" | "{%")[];
export declare const MANIFEST: "manifest.json";
export declare const ARTIFACT_SCHEMA: "promptc.artifact/2";
export declare const MANIFEST_SCHEMA: "promptc.manifest/2";
