// Generated from promptc.facts.language by runtime-js/gen_constants.py: do not edit.

// Between the sections of a block and between the blocks of a message.
export const JOINER = "\n\n";
// The request shapes `Rendered.asShape` produces.
export const SHAPES = Object.freeze(["plain", "anthropic", "openai", "openai-responses", "gemini", "bedrock", "anthropic-vertex"]);
// Roles whose messages go to Anthropic's `system` field (and open a Gemini request's system).
export const SYSTEM_ROLES = Object.freeze(["system", "developer"]);
// What a placeholder holds: a name or a dotted path (`${user.name}`).
export const PLACEHOLDER_PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;
// The attribute rule: no segment of a placeholder path starts with UNSAFE_PREFIX or is one of
// UNSAFE_NAMES (names that reach an object's internals), whatever the value is.
export const UNSAFE_PREFIX = "_";
export const UNSAFE_NAMES = Object.freeze(["ag_code", "ag_frame", "constructor", "cr_code", "cr_frame", "f_back", "f_builtins", "f_code", "f_globals", "f_locals", "f_trace", "func_closure", "func_code", "func_defaults", "func_dict", "func_globals", "gi_code", "gi_frame", "im_class", "im_func", "im_self", "mro", "prototype", "tb_frame", "tb_next"]);
// The openers a backslash escapes in artifact template text.
export const TEMPLATE_ESCAPES = Object.freeze(["${", "{{", "{#", "{%"]);
// The build folder's index of artifacts, and the schemas of what a build writes.
export const MANIFEST = "manifest.json";
export const ARTIFACT_SCHEMA = "promptc.artifact/2";
export const MANIFEST_SCHEMA = "promptc.manifest/2";
