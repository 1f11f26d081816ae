// The client: which command it starts and how, with `vscode` and the language client stubbed
// (neither runs outside VS Code); the server itself is tested in the Python suite.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const Module = require("node:module");
const path = require("node:path");

function loadExtension({ settings = {}, folder = "/work/project" } = {}) {
  const created = [];
  const registered = [];
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, started: 0, stopped: 0 });
      created.push(this);
    }
    async start() { this.started += 1; }
    async stop() { this.stopped += 1; }
  }
  const listeners = [];
  const vscode = {
    workspace: {
      workspaceFolders: folder ? [{ uri: { fsPath: folder } }] : undefined,
      getConfiguration: (section) => ({ get: (key) => settings[`${section}.${key}`] }),
      createFileSystemWatcher: (glob) => ({ glob }),
      onDidChangeConfiguration: (listener) => (listeners.push(listener), { dispose() {} }),
    },
    commands: { registerCommand: (name, fn) => (registered.push([name, fn]), { dispose() {} }) },
    window: { showErrorMessage: () => undefined },
  };
  const stubs = { vscode, "vscode-languageclient/node": { LanguageClient, TransportKind: { stdio: 0 } } };
  const original = Module._load;
  Module._load = function (request, ...rest) {
    return Object.hasOwn(stubs, request) ? stubs[request] : original.call(this, request, ...rest);
  };
  const file = path.join(__dirname, "..", "extension.js");
  delete require.cache[file];
  try {
    return { extension: require(file), created, registered, listeners };
  } finally {
    Module._load = original;
  }
}

test("the server is `promptc lsp` over stdio for prompt files", async () => {
  const { extension, created } = loadExtension({ folder: "/nonexistent/project" });
  const context = { subscriptions: [] };
  await extension.activate(context);
  assert.equal(created.length, 1);
  const [client] = created;
  assert.equal(client.serverOptions.run.command, "promptc");
  assert.deepEqual(client.serverOptions.run.args, ["lsp"]);
  assert.equal(client.serverOptions.run.transport, 0);
  assert.deepEqual(client.serverOptions.run.options, { cwd: "/nonexistent/project" });
  assert.deepEqual(client.clientOptions.documentSelector, [{ language: "prompt" }]);
  assert.equal(client.started, 1);
});

test("promptc.path and promptc.args are used, with ${workspaceFolder} replaced", async () => {
  const { extension, created } = loadExtension({
    settings: { "promptc.path": "${workspaceFolder}/tools/promptc", "promptc.args": ["--verbose"] },
  });
  await extension.activate({ subscriptions: [] });
  assert.equal(created[0].serverOptions.run.command, "/work/project/tools/promptc");
  assert.deepEqual(created[0].serverOptions.run.args, ["lsp", "--verbose"]);
});

test("without promptc.path the workspace's .venv wins over PATH", () => {
  const { extension } = loadExtension();
  const seen = [];
  const exists = (p) => (seen.push(p), true);
  assert.deepEqual(extension.serverCommand({}, "/w", "linux", exists), { command: "/w/.venv/bin/promptc", args: ["lsp"] });
  assert.equal(extension.serverCommand({}, "C:\\w", "win32", () => true).command, path.join("C:\\w", ".venv", "Scripts", "promptc.exe"));
  assert.deepEqual(extension.serverCommand({}, "/w", "linux", () => false), { command: "promptc", args: ["lsp"] });
  assert.deepEqual(extension.serverCommand({ path: "  " }, undefined), { command: "promptc", args: ["lsp"] });
});

test("a settings change and the restart command restart the server", async () => {
  const { extension, created, registered, listeners } = loadExtension({ folder: "/nonexistent" });
  await extension.activate({ subscriptions: [] });
  await listeners[0]({ affectsConfiguration: (s) => s === "editor" });
  assert.equal(created.length, 1, "an unrelated setting leaves the server alone");
  await listeners[0]({ affectsConfiguration: (s) => s === "promptc" });
  assert.equal(created.length, 2);
  assert.equal(created[0].stopped, 1);
  const [name, restart] = registered.find(([n]) => n === "promptc.restartServer");
  assert.equal(name, "promptc.restartServer");
  await restart();
  assert.equal(created.length, 3);
  await extension.deactivate();
  assert.equal(created[2].stopped, 1);
});
